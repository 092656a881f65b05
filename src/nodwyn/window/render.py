"""Rendering a context's view into messages, incrementally.

A render is a function of the view's entries and :class:`Params` (recipe, origin, withheld images,
sticky elided set, stale replies, folds, accepted summaries). The cache keeps the last render of
each view: when the next build's params are equal it only renders the entries appended since, so a
request costs what was appended, not the log. Each message is encoded once to its canonical bytes
(its *piece*); the request's canonical bytes are the pieces joined (``encode.py``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import orjson

from nodwyn.values.codec import message_to_json, part_to_json
from nodwyn.values.content import (
    AssistantMessage,
    Message,
    Origin,
    TextPart,
    ThinkingBlock,
    ToolMessage,
    UserMessage,
)
from nodwyn.values.recipe import Recipe, Rules
from nodwyn.window import blocks, encode
from nodwyn.window.caps import _cap_for, _cap_text, _is_fs_read
from nodwyn.window.contexts import Context
from nodwyn.window.entries import _Entry
from nodwyn.window.headers import _system_with_task, kept, plan_header, task_header, under
from nodwyn.window.images import _image_message, _result_images
from nodwyn.window.summaries import Summary, summary_text


def piece(message: Message) -> bytes:
    """The canonical (JCS) bytes of one message: its keys are ASCII, so sorted keys suffice."""
    return orjson.dumps(message_to_json(message), option=orjson.OPT_SORT_KEYS)


def marker(seq: int, last: int | None = None) -> str:
    """The text an elided entry shows; from v20 a run of elided units shows ``[elided seq=A..B]``,
    A and B the seqs of its first and last reply."""
    if last is None or last == seq:
        return f"[elided seq={seq}]"
    return f"[elided seq={seq}..{last}]"


def _run_message(first: int, last: int) -> AssistantMessage:
    """What a run of elided units shows (v20): one assistant message naming it."""
    return AssistantMessage(text=marker(first, last))


def _marker_message(item: Item) -> Message:
    """What ``item`` shows once elided: its marker, in a message of the same role."""
    text = marker(item.seq)
    m = item.message
    if isinstance(m, ToolMessage):
        return ToolMessage(call_id=m.call_id, name=m.name, text=text, error=m.error)
    if item.kind == "image":
        return UserMessage(parts=(TextPart(text=text),))
    return AssistantMessage(text=text)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Params:
    recipe: Recipe
    rules: Rules  # the window's rules (the recipe's, or a measurement's own)
    origin: Origin | None  # None when the recipe gives no blocks back
    withheld: tuple[tuple[str, str], ...]
    elided: frozenset[int]
    stale: frozenset[int]
    folds: int  # fold version
    summaries: tuple[Summary, ...]
    version: int  # the view's version


@dataclass(slots=True, kw_only=True)
class Item:
    seq: int
    kind: str  # user | image | plan | assistant | result | summary | closed
    message: Message
    piece: bytes
    image_bytes: int = 0
    image_tokens: int = 0
    elided: bool = False
    calls: tuple[str, ...] = ()
    results: list[int] = field(default_factory=list)  # assistant: item indexes of its results
    batch: int = -1  # result: item index of its calling batch
    has_blocks: bool = False
    withheld: tuple[tuple[str, str], ...] = ()
    last: int = 0  # v20: an elided run's last reply seq (0 for anything else)


def _item(seq: int, kind: str, message: Message, **kw: object) -> Item:
    return Item(seq=seq, kind=kind, message=message, piece=piece(message), **kw)  # type: ignore[arg-type]


@dataclass(slots=True, kw_only=True)
class _RenderCache:
    params: _Params
    items: list[Item] = field(default_factory=list)
    upto: int = 0
    pending_plan: Item | None = None
    call_batch: dict[str, int] = field(default_factory=dict)
    omitted: list[int] = field(default_factory=list)  # results left out with their elided batch
    task: str | None = None
    plan: str | None = None
    body: int = 0  # sum of piece lengths of items (pending plan excluded)
    image_bytes: int = 0
    image_tokens: int = 0
    # the request's canonical bytes up to the last item are ``head`` and the pieces joined by
    # commas; a SHA-256 over them is kept as items are pushed: a build copies it and adds the tail
    head: bytes = b""
    pieces: list[bytes] = field(default_factory=list)
    hasher: hashlib._Hash = field(default_factory=hashlib.sha256)  # replaced in __post_init__
    stream: bytearray = field(default_factory=bytearray)  # head + pieces[:streamed] joined
    streamed: int = 0
    msgs: list[Message] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    # v20: the run of elided units being rendered, [first reply seq, last reply seq], pushed as
    # one item (at index len(items)) when anything else is pushed or the extension ends
    run: list[int] | None = None

    def __post_init__(self) -> None:
        limits_out = self.params.recipe.limits.output_reserve if self.params.rules.output_cap else None
        self.head = encode.head(encode.max_output_bytes(limits_out))
        self.hasher = hashlib.sha256(self.head)
        self.stream += self.head

    def messages(self) -> list[Item]:
        if self.pending_plan is None:
            return self.items
        return [*self.items, self.pending_plan]

    def _push(self, item: Item) -> int:
        if self.run is not None:
            self._flush_run()
        return self._append(item)

    def _flush_run(self) -> None:
        if self.run is not None:
            first, last = self.run
            self.run = None
            self._append(_item(first, "assistant", _run_message(first, last), elided=True, last=last))

    def _append(self, item: Item) -> int:
        if self.pieces:
            self.hasher.update(b",")
        self.hasher.update(item.piece)
        self.pieces.append(item.piece)
        self.msgs.append(item.message)
        self.seqs.append(item.seq)
        self.items.append(item)
        self.body += len(item.piece)
        self.image_bytes += item.image_bytes
        self.image_tokens += item.image_tokens
        return len(self.items) - 1

    def canonical(self, end: bytes) -> bytes:
        """The request's canonical bytes: the head, the pieces so far, then ``end``.

        The pieces are joined into ``stream`` as builds need them, so a build copies what was
        appended once and the whole request once.
        """
        p = self.pieces
        if self.streamed < len(p):
            if self.streamed:
                self.stream += b","
            self.stream += b",".join(p[self.streamed :])
            self.streamed = len(p)
        return b"".join((self.stream, end))

    def _flush_plan(self) -> None:
        if self.pending_plan is not None:
            self._push(self.pending_plan)
            self.pending_plan = None

    def system(self, view: Context) -> str:
        p = self.params
        if view.system is not None:
            return view.system
        if p.rules.in_conversation:
            return p.recipe.system
        task = (task_header(p.recipe, p.rules), self.task) if self.task is not None else None
        plan = (plan_header(p.recipe, p.rules), self.plan) if self.plan is not None else None
        return _system_with_task(p.recipe.system, task, plan)

    def extend(self, view: Context, folds: Mapping[int, str], withheld: Mapping[str, str]) -> None:
        p = self.params
        spans = p.summaries
        entries = view.entries
        for index in range(self.upto, len(entries)):
            e = entries[index]
            covering = next((s for s in spans if s.first <= e.seq <= s.last), None)
            if covering is not None:
                if index == 0 or not (covering.first <= entries[index - 1].seq <= covering.last):
                    self._flush_plan()
                    self._summary(covering)
                continue
            self._entry(e, folds, withheld)
        self._flush_run()
        self.upto = len(entries)

    def _summary(self, s: Summary) -> None:
        if s.seq in self.params.elided:
            self._push(_item(s.seq, "summary", AssistantMessage(text=marker(s.seq)), elided=True))
        else:
            self._push(_item(s.seq, "summary", AssistantMessage(text=summary_text(s))))

    def _entry(self, e: _Entry, folds: Mapping[int, str], withheld: Mapping[str, str]) -> None:
        p = self.params
        rules = p.rules
        if e.kind == "plan":
            if rules.in_conversation:
                text = under(kept(e, plan_header(p.recipe, rules), rules), e.text)
                self.pending_plan = _item(e.seq, "plan", UserMessage(parts=(TextPart(text=text),)))
            else:
                self.plan = e.text
            return
        if e.kind == "result":
            self._result(e, folds, withheld)
            return
        self._flush_plan()
        if e.kind == "user":
            if rules.in_conversation:
                text = under(kept(e, task_header(p.recipe, rules), rules), e.text)
            else:
                text = e.text
                self.task, self.plan = e.text, None
            self._push(_item(e.seq, "user", UserMessage(parts=(TextPart(text=text),))))
            if e.images and rules.images:
                self._images(e, withheld)
        elif e.kind == "assistant":
            self._assistant(e)
        else:  # closed narrowing's result
            elided = e.seq in p.elided
            text = marker(e.seq) if elided else e.text
            self._push(_item(e.seq, "closed", AssistantMessage(text=text), elided=elided))

    def _images(self, e: _Entry, withheld: Mapping[str, str]) -> None:
        if e.seq in self.params.elided:
            msg = UserMessage(parts=(TextPart(text=marker(e.seq)),))
            self._push(_item(e.seq, "image", msg, elided=True))
            return
        r = _image_message(e.images, withheld)
        ib = sum(len(orjson.dumps(part_to_json(part), option=orjson.OPT_SORT_KEYS)) for part in r.parts)
        self._push(
            _item(e.seq, "image", r.message, image_bytes=ib, image_tokens=r.tokens, withheld=r.withheld)
        )

    def _assistant(self, e: _Entry) -> None:
        p = self.params
        reply = e.reply
        calls = tuple(c.id for c in reply.calls)
        if e.seq in p.elided and p.rules.units:
            # consecutive elided units show as one run: the run is pushed when something else is
            if self.run is None:
                self.run = [e.seq, e.seq]
            else:
                self.run[1] = e.seq
            index = len(self.items)  # where the run will be
        elif e.seq in p.elided:
            msg = AssistantMessage(text=marker(e.seq))
            index = self._push(_item(e.seq, "assistant", msg, elided=True, calls=calls))
        else:
            msg = _assistant_message(e, p, with_blocks=self.blocks_allowed(e.seq))
            index = self._push(_item(e.seq, "assistant", msg, calls=calls, has_blocks=bool(msg.blocks)))
        for call in calls:
            self.call_batch[call] = index

    def _batch_elided(self, batch: int) -> bool:
        if batch < len(self.items):
            return self.items[batch].elided
        return self.run is not None and batch == len(self.items)  # a reply of the run being rendered

    def blocks_allowed(self, seq: int) -> bool:
        p = self.params
        return blocks.allowed(seq, p.origin, p.stale, p.summaries)

    def _result(self, e: _Entry, folds: Mapping[int, str], withheld: Mapping[str, str]) -> None:
        p = self.params
        batch = self.call_batch.get(e.call_id, -1)
        if p.rules.pairs and batch >= 0 and self._batch_elided(batch):
            self.omitted.append(e.seq)
            return
        if e.seq in p.elided:
            msg = ToolMessage(call_id=e.call_id, name=e.name, text=marker(e.seq), error=e.error)
            index = self._push(_item(e.seq, "result", msg, elided=True, batch=batch))
        elif e.images and p.rules.images and not (p.rules.folds and e.seq in folds):
            r = _result_images(e.images, withheld)
            text = "\n".join((_result_text(e, p, folds), *r.lines))
            msg = ToolMessage(call_id=e.call_id, name=e.name, text=text, error=e.error, images=r.parts)
            ib = sum(len(orjson.dumps(part_to_json(part), option=orjson.OPT_SORT_KEYS)) for part in r.parts)
            item = _item(e.seq, "result", msg, batch=batch, image_bytes=ib, image_tokens=r.tokens)
            item.withheld = r.withheld
            index = self._push(item)
        else:
            msg = ToolMessage(call_id=e.call_id, name=e.name, text=_result_text(e, p, folds), error=e.error)
            index = self._push(_item(e.seq, "result", msg, batch=batch))
        if batch >= 0:
            self.items[batch].results.append(index)


def _assistant_message(e: _Entry, p: _Params, *, with_blocks: bool) -> AssistantMessage:
    reply = e.reply
    kept: tuple[ThinkingBlock, ...] = ()
    if with_blocks and p.origin is not None:
        kept = blocks._for_origin(reply.blocks, p.origin)
    return AssistantMessage(
        text=reply.text,
        thinking=reply.thinking if p.rules.thinking else "",
        calls=reply.calls,
        blocks=kept,
        phase=reply.phase,
        raw=reply.raw,
    )


def _result_text(e: _Entry, p: _Params, folds: Mapping[int, str]) -> str:
    text = e.text
    if p.rules.folds and e.seq in folds:
        text = folds[e.seq]
    fs_read = _is_fs_read(e.name, e.has_range)
    cap = _cap_for(p.recipe.limits.max_result_tokens, fs_read=fs_read, wide_reads=p.rules.wide_reads)
    return _cap_text(text, cap, named=p.rules.named_cuts, fs_read=fs_read, range_start=e.range_start)


def render(
    last: _RenderCache | None,
    view: Context,
    params: _Params,
    folds: Mapping[int, str],
    withheld: Mapping[str, str],
) -> _RenderCache:
    """The view rendered under ``params``: ``last`` (the view's previous render) extended by the
    entries appended since when its params are the same, else a render from the start."""
    cache = last if last is not None and last.params == params else _RenderCache(params=params)
    if cache.upto < len(view.entries):
        cache.extend(view, folds, withheld)
    return cache
