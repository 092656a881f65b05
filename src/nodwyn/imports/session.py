"""An imported run as a nodwyn session, and back (ADR 0280).

The session's ``session.start`` records a recipe whose system prompt and tools are the run's, the
source's model, and ``imported``: the source format, file, SHA-256 of its bytes and the run's
name. Then, in the run's order: each user message is a ``user.msg``, each result a
``tool.result``, and each of the agent's replies is the request the agent sent (``llm.seen``:
the events it held, and what the agent did that changed it) answered by an ``llm.resp`` holding
the reply and the usage the provider reported. A message the agent sent that the conversation
does not hold (a summary, a masked observation) is an ``import.view`` logged before the first
request that held it. nodwyn built none of these requests, so they carry no digest and exact
replay claims none of them; ``observed`` reads them back for the cache diagnosis.

``write`` validates nothing itself: the loaders read the whole source into a ``Run`` first, so a
file they refuse creates nothing. The session is written in a staging store and adopted whole
(``Store.staging``, ADR 0295): a failure or a kill while writing leaves no part of it among the
sessions, so a re-import never mistakes a partial session for the source.
"""

from __future__ import annotations

import hashlib
import shutil
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, assert_never

from nodwyn.errors import CorruptLogError, NodwynError, NotFoundError
from nodwyn.imports.discover import Found
from nodwyn.imports.jsonfile import read_source
from nodwyn.imports.run import Run, Sent, Stand
from nodwyn.log import SessionLog, Store, utc_now
from nodwyn.record import start_session
from nodwyn.values.codec import message_from_json, message_to_json
from nodwyn.values.content import AssistantMessage, Message, TextPart, ToolMessage, UserMessage
from nodwyn.values.events import (
    IMPORT_VIEW,
    LLM_RESP,
    LLM_SEEN,
    SESSION_START,
    TOOL_RESULT,
    USER_MSG,
    Bookkeeping,
    Event,
    GatePlan,
    ImportView,
    LlmReq,
    LlmResp,
    LlmSeen,
    Note,
    SessionResume,
    SessionStart,
    ToolResult,
    UserMsg,
    decode,
)
from nodwyn.values.model import Prices
from nodwyn.values.recipe import DEFAULT_VERSION, Recipe, WindowLimits
from nodwyn.values.request import Request, Response, Usage

# What an imported session's recipe sizes nothing with: nodwyn builds none of its requests.
NO_LIMITS = WindowLimits(high_water=0, low_water=0, max_result_tokens=0, output_reserve=0, ceiling=0)
# The kinds ``read`` takes: the conversation, and the requests and views the other agent sent.
_READ = frozenset({USER_MSG, LLM_RESP, TOOL_RESULT, LLM_SEEN, IMPORT_VIEW})


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    format: str  # the loader's format name ("claude-code", "mini-swe-agent-v2", ...)
    path: str  # the file or folder read, as given
    sha256: str  # "sha256:<hex>" of its bytes (a folder: its files' names and bytes, in order)
    name: str  # the run's name

    def to_data(self) -> dict[str, str]:
        return {"format": self.format, "file": self.path, "sha256": self.sha256, "name": self.name}


def digest_of(path: Path) -> str:
    """SHA-256 of a source's bytes; for a folder (an OpenHands conversation), of each file's
    relative name and bytes in name order, so the same conversation has the same digest."""
    h = hashlib.sha256()
    if path.is_dir():
        for f in sorted(p for p in path.rglob("*") if p.is_file()):
            h.update(str(f.relative_to(path)).encode() + b"\0")
            h.update(read_source(f))
            h.update(b"\0")
    else:
        h.update(read_source(path))
    return "sha256:" + h.hexdigest()


def source_of(found: Found, run: Run) -> Source:
    return Source(format=run.format, path=str(found.path), sha256=digest_of(found.path), name=run.name)


def imported_of(event: Event) -> dict[str, Any] | None:
    """The ``imported`` record of a session's first event, or None for a session nodwyn ran."""
    if event.kind != SESSION_START or not isinstance(event.data, dict):
        return None
    value = event.data.get("imported")
    return value if isinstance(value, dict) else None


def imported_sessions(store: Store) -> dict[str, str]:
    """Source digest -> the session that holds it, over every session of ``store`` (one read of
    each session's first event)."""
    out: dict[str, str] = {}
    for sid in store.ids():
        try:
            with store.open(sid) as log:
                first = next(iter(log.read(1, 1)), None)
        except NodwynError:
            continue
        rec = imported_of(first) if first is not None else None
        if rec is not None and isinstance(rec.get("sha256"), str):
            out.setdefault(rec["sha256"], sid)
    return out


def _text(m: UserMessage) -> str:
    return "".join(p.text for p in m.parts if isinstance(p, TextPart))


class _SourceClock:
    """The times an imported session's events carry: the source's own (``Run.started``, and
    ``Run.ended`` for the last reply), else the time of the import."""

    def __init__(self, run: Run) -> None:
        self.started, self.ended = _when(run.started), _when(run.ended)
        self.at = self.started

    def __call__(self) -> datetime:
        return self.at or utc_now()

    def last(self) -> None:
        self.at = self.ended or self.started


def _when(stamp: str) -> datetime | None:
    """An ISO 8601 time as UTC; None when it is not one (a source's time is not checked further)."""
    try:
        t = datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        return None
    return None if t is None else (t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC))


def write(store: Store, run: Run, source: Source, prices: Mapping[str, Prices] | None = None) -> str:
    """Write ``run`` as a new imported session; its id. ``prices`` (by model) are recorded in the
    recipe, so the session is costed at them (ADR 0180). The session is dated as its source is
    (``Run.started``; ADR 0431) and titled with ``Run.title`` when the source has one."""
    model = run.model or next((s.model for s in run.requests if s.model), "") or "unknown"
    recipe = Recipe(
        version=DEFAULT_VERSION,
        system=run.system,
        tools=run.tools,
        limits=NO_LIMITS,
        context_size=0,
        prices=tuple(sorted(prices.items())) if prices else None,
    )
    clock = _SourceClock(run)
    staged = store.staging(clock=clock)
    imported: dict[str, object] = {**source.to_data(), **({"title": run.title} if run.title else {})}
    try:
        with start_session(staged, recipe, model, extra={"imported": imported}) as log:
            _write_events(log, run, model, clock)
        store.adopt(staged, log.id)
    finally:
        shutil.rmtree(staged.root, ignore_errors=True)
    return log.id


def _write_events(log: SessionLog, run: Run, model: str, clock: _SourceClock) -> None:
    seqs: list[int] = []  # the event of each message of run.messages
    views: dict[Stand, int] = {}
    k = 0
    for i, m in enumerate(run.messages):
        if i == len(run.messages) - 1:
            clock.last()
        if isinstance(m, AssistantMessage):
            sent = run.sent(k)
            items: list[int | tuple[int, int]] = []
            for item in run.view(k):
                if isinstance(item, Stand):
                    seq = views.get(item)
                    if seq is None:
                        of = tuple(seqs[j] for j in item.of if j < len(seqs)) if item.of else None
                        view = ImportView(message=message_to_json(item.message), why=item.why, of=of)
                        seq = views[item] = log.append(view).seq
                    items.append(seq)
                else:
                    seq = seqs[item]
                    last = items[-1] if items else None
                    if isinstance(last, tuple) and item > 0 and seqs[item - 1] == last[1]:
                        items[-1] = (last[0], seq)
                    else:
                        items.append((seq, seq))
            seen = LlmSeen(
                model=sent.model or model,
                messages=tuple(_encoded(items)),
                why=tuple(sent.why) if sent.why else None,
            )
            req = log.append(seen).seq
            response = Response(
                text=m.text,
                thinking=m.thinking,
                calls=m.calls,
                usage=sent.usage if sent.usage is not None else Usage(),
                model=sent.model or None,
            )
            seqs.append(log.append(LlmResp(req=req, response=response)).seq)
            k += 1
        elif isinstance(m, UserMessage):
            seqs.append(log.append(UserMsg(text=_text(m))).seq)
        elif isinstance(m, ToolMessage):
            result = ToolResult(call_id=m.call_id, name=m.name, text=m.text, error=m.error)
            seqs.append(log.append(result).seq)
        else:  # pragma: no cover - Message is these three
            raise TypeError(type(m).__name__)


def _encoded(items: list[int | tuple[int, int]]) -> list[int | tuple[int, int]]:
    """Ranges of one event as the bare seq (a view is always a bare seq)."""
    return [v if isinstance(v, int) else (v[0] if v[0] == v[1] else v) for v in items]


# -- reading back --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Imported:
    """An imported session read back: its recipe, source, messages by seq, and each observed
    request (llm.seen seq -> its messages as seqs, in order)."""

    start: SessionStart
    source: dict[str, Any]
    messages: dict[int, Message]  # conversation and view events, by seq
    conversation: tuple[int, ...]  # the conversation's events, in order
    views: dict[int, ImportView]
    requests: dict[int, tuple[int, ...]]
    seen: dict[int, LlmSeen]
    replies: dict[int, LlmResp]  # llm.seen seq -> its reply


def read(events: Iterable[Event]) -> Imported:
    """Read an imported session's events; ``NotFoundError`` if it is not an imported session,
    ``CorruptLogError`` naming the seq if an event does not decode or names a missing message."""
    start: SessionStart | None = None
    source: dict[str, Any] | None = None
    messages: dict[int, Message] = {}
    conversation: list[int] = []
    views: dict[int, ImportView] = {}
    requests: dict[int, tuple[int, ...]] = {}
    seen: dict[int, LlmSeen] = {}
    replies: dict[int, LlmResp] = {}
    for ev in events:
        if ev.seq == 1:
            source = imported_of(ev)
            if source is None:
                raise NotFoundError("not an imported session (its session.start records no source)")
            p = decode(ev)
            assert isinstance(p, SessionStart)
            start = p
            continue
        if ev.kind not in _READ:
            continue  # not decoded: a damaged event of another kind is no business of the import's
        p = decode(ev)
        match p:
            case UserMsg():
                messages[ev.seq] = UserMessage(parts=(TextPart(text=p.text),))
                conversation.append(ev.seq)
            case ToolResult():
                messages[ev.seq] = ToolMessage(call_id=p.call_id, name=p.name, text=p.text, error=p.error)
                conversation.append(ev.seq)
            case LlmResp():
                r = p.response
                messages[ev.seq] = AssistantMessage(text=r.text, thinking=r.thinking, calls=r.calls)
                conversation.append(ev.seq)
                if p.req in seen:
                    replies[p.req] = p
            case ImportView():
                messages[ev.seq] = message_from_json(p.message, f"import.view at seq {ev.seq}.message")
                views[ev.seq] = p
            case LlmSeen():
                seen[ev.seq] = p
                requests[ev.seq] = _expand(p, ev.seq, conversation, messages)
            case SessionStart() | SessionResume() | LlmReq() | GatePlan() | Note() | Bookkeeping():
                pass  # not in _READ: not the other agent's conversation
            case _:
                assert_never(p)
    if start is None or source is None:
        raise NotFoundError("not an imported session (no session.start)")
    return Imported(
        start=start,
        source=source,
        messages=messages,
        conversation=tuple(conversation),
        views=views,
        requests=requests,
        seen=seen,
        replies=replies,
    )


def _expand(
    p: LlmSeen, seq: int, conversation: list[int], messages: Mapping[int, Message]
) -> tuple[int, ...]:
    out: list[int] = []
    for item in p.messages:
        if isinstance(item, tuple):
            lo, hi = bisect_left(conversation, item[0]), bisect_right(conversation, item[1])
            if lo == hi or conversation[lo] != item[0] or conversation[hi - 1] != item[1]:
                raise CorruptLogError(
                    f"llm.seen at seq {seq}: messages {list(item)} is not a range of messages before it"
                )
            out.extend(conversation[lo:hi])
        elif item in messages:
            out.append(item)
        else:
            raise CorruptLogError(f"llm.seen at seq {seq}: message seq {item} is no message before it")
    return tuple(out)


def observed(events: Iterable[Event]) -> dict[int, Request]:
    """Each observed request of an imported session (llm.seen seq -> the request the agent sent,
    system prompt and tools from the recipe); empty for a session nodwyn ran."""
    try:
        imp = read(events)
    except NotFoundError:
        return {}
    recipe = imp.start.recipe
    system = recipe.system if recipe is not None else ""
    tools = recipe.tools if recipe is not None else ()
    return {
        seq: Request(system=system, tools=tools, messages=tuple(imp.messages[s] for s in held))
        for seq, held in imp.requests.items()
    }


def conversation(log: SessionLog) -> Run:
    """An imported session read back into the neutral ``Run`` the loader made of its source: the
    conversation (no views), and per request what the agent sent (``Sent.view``), its model, what
    the agent did (``why``) and the usage its provider reported. ``NotFoundError`` for a session
    nodwyn ran (it has no other agent's conversation)."""
    imp = read(log.read())
    index = {seq: i for i, seq in enumerate(imp.conversation)}
    stands = {
        seq: Stand(message=imp.messages[seq], why=v.why, of=tuple(index[s] for s in v.of or () if s in index))
        for seq, v in imp.views.items()
    }
    sents: list[Sent] = []
    for seq, held in imp.requests.items():
        p = imp.seen[seq]
        reply = imp.replies.get(seq)
        # the conversation so far: every conversation event before it
        plain = tuple(index.get(s, -1) for s in held) == tuple(range(bisect_right(imp.conversation, seq)))
        view = None if plain else tuple(stands[s] if s in stands else index[s] for s in held)
        usage = reply.response.usage if reply is not None else None
        reported = usage is not None and any(
            v is not None
            for v in (usage.prompt_tokens, usage.cached_tokens, usage.cache_write_tokens, usage.output_tokens)
        )
        sents.append(Sent(usage=usage if reported else None, model=p.model, view=view, why=p.why or ()))
    recipe = imp.start.recipe
    return Run(
        name=str(imp.source.get("name", log.id)),
        format=str(imp.source.get("format", "")),
        system=recipe.system if recipe is not None else "",
        tools=recipe.tools if recipe is not None else (),
        messages=tuple(imp.messages[s] for s in imp.conversation),
        model=imp.start.model,
        requests=tuple(sents),
    )
