"""The neutral conversation a loader makes of one agent run.

A run is what its model saw, in order: the system prompt, the tool catalog (empty for agents whose
actions are text), and the messages, where each ``AssistantMessage`` is one of the model's replies.
Request k is the system prompt, the catalog and ``messages[:replies[k]]``: everything before the
k-th reply. Nothing after the last reply is kept (the model never saw it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nodwyn.errors import ImportFormatError
from nodwyn.values.content import AssistantMessage, Message, TextPart, ToolMessage, UserMessage
from nodwyn.values.request import ToolSpec, Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class Stand:
    """A message the agent sent that its conversation does not hold: a summary in place of the
    messages it forgot, a masked observation in place of the result. ``of``: indexes in
    ``Run.messages`` of what it stands for, when the source tells."""

    message: Message
    why: str  # "condensation", "compaction", "masked observation", ...
    of: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    """One request as the agent sent it, with what its provider reported.

    ``view`` None: the conversation so far (``messages[:replies[k]]``); otherwise the messages in
    order, each an index in ``Run.messages`` or a ``Stand``. ``why``: what the agent did since its
    previous request that changed what it sent, as the source records it. ``usage`` None: the
    source records none for this request."""

    usage: Usage | None = None
    model: str = ""
    view: tuple[int | Stand, ...] | None = None
    why: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    name: str  # path of the run relative to the workload folder
    format: str  # "mini-swe-agent-v1", "mini-swe-agent-v2", "swe-agent", "openhands-v1"
    system: str
    tools: tuple[ToolSpec, ...]
    messages: tuple[Message, ...]
    notes: tuple[str, ...] = field(default=())  # what the loader left out, e.g. peer condensations
    model: str = ""  # the model the source names ("" when it names none)
    # One per reply when the source records anything per request (usage, model, what was sent);
    # empty when it records nothing: each request is then the conversation so far, usage unknown.
    requests: tuple[Sent, ...] = field(default=())
    # What the source tells of the run itself (empty when it does not): the ISO 8601 times of its
    # first and last events, and its title, the first prompt the person typed (not a wrapper the
    # agent logged as a user message, such as Claude Code's local-command caveat).
    started: str = ""
    ended: str = ""
    title: str = ""

    @property
    def replies(self) -> tuple[int, ...]:
        """Indexes of the model's replies in ``messages``: request k is ``messages[:replies[k]]``."""
        return tuple(i for i, m in enumerate(self.messages) if isinstance(m, AssistantMessage))

    def sent(self, k: int) -> Sent:
        """Request k as the source records it (a bare ``Sent`` when it records nothing)."""
        return self.requests[k] if self.requests else Sent(model=self.model)

    def view(self, k: int) -> tuple[int | Stand, ...]:
        """The messages of request k, in order: indexes in ``messages`` or ``Stand``s."""
        v = self.sent(k).view
        return tuple(range(self.replies[k])) if v is None else v


class Reader:
    """What a loader has read so far: the messages, one ``Sent`` per reply when the source records
    its requests, what the agent did since its previous request (``why``), the tools' names by call
    id, and the latest compaction's summary with where the messages after it begin."""

    def __init__(self, model: str = "") -> None:
        self.system: str | None = None
        self.tools: tuple[ToolSpec, ...] = ()
        self.model = model
        self.out: list[Message] = []
        self.sents: list[Sent] = []
        self.why: list[str] = []
        self.names: dict[str, str] = {}  # call id -> tool name
        self.summary: Stand | None = None
        self.since: int | None = None  # index in out where the view after the latest compaction begins
        self.started = self.ended = self.title = ""

    def view(self) -> tuple[int | Stand, ...] | None:
        """What the next request holds (None: the conversation so far): after a compaction, its
        summary and what followed it."""
        if self.since is None or self.summary is None:
            return None
        return (self.summary, *range(self.since, len(self.out)))

    def reply(self, message: AssistantMessage, usage: Usage | None, model: str) -> None:
        """A new reply, after the request that asked for it."""
        self.sents.append(Sent(usage=usage, model=model, view=self.view(), why=tuple(self.why)))
        self.why.clear()
        self.out.append(message)

    def result(self, call_id: str, text: str, error: bool) -> None:
        name = self.names.get(call_id, "")
        self.out.append(ToolMessage(call_id=call_id, name=name, text=text, error=error))

    def run(self, name: str, format: str, where: str, notes: tuple[str, ...] = ()) -> Run:
        """The run read (``where``: the source, for errors)."""
        return Run(
            name=name,
            format=format,
            system=self.system or "",
            tools=self.tools,
            messages=tuple(checked(self.out, where)),
            notes=notes,
            model=self.model,
            requests=tuple(self.sents),
            started=self.started,
            ended=self.ended,
            title=self.title,
        )


def user(text: str) -> UserMessage:
    return UserMessage(parts=(TextPart(text=text),))


def first_system(system: str | None, out: list[Message], content: str, where: str) -> str:
    """``content`` as the run's system prompt: the agent sends one, before any other message."""
    if system is not None or out:
        raise ImportFormatError(f"{where}: a second system message; the agent sends one, first")
    return content


def checked(messages: list[Message], where: str) -> list[Message]:
    """The messages up to and including the last reply (what follows it no model saw), checked:
    every result answers a call of the latest reply before it, once; every call but the last
    reply's is answered before the next reply. Loaders end with this so a replay never sees orphans."""
    last = max((i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)), default=-1)
    messages = messages[: last + 1]
    open_calls: set[str] = set()
    for i, m in enumerate(messages):
        if isinstance(m, AssistantMessage):
            if open_calls:
                raise ImportFormatError(
                    f"{where}: message {i}: calls {sorted(open_calls)} have no result before the next reply"
                )
            open_calls = {c.id for c in m.calls}
            if len(open_calls) != len(m.calls):
                raise ImportFormatError(f"{where}: message {i}: a reply repeats a call id")
        elif isinstance(m, ToolMessage):
            if m.call_id not in open_calls:
                raise ImportFormatError(
                    f"{where}: message {i}: result for call {m.call_id!r}, not a call of the latest reply"
                )
            open_calls.remove(m.call_id)
    return messages


def count(d: object, key: str, where: str) -> int | None:
    """``d[key]`` as a token count; None when it is absent (or ``d`` is no object)."""
    v = d.get(key) if isinstance(d, dict) else None
    if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
        raise ImportFormatError(f"{where}.{key}: expected a count, found {v!r}")
    return v


def openai_usage(u: object, where: str) -> Usage | None:
    """Usage as an OpenAI-style chat completion reports it (``prompt_tokens`` the whole prompt,
    ``prompt_tokens_details.cached_tokens`` the part read from the cache; DeepSeek's
    ``prompt_cache_hit_tokens`` when the details are absent). None when the reply has none."""
    if u is None:
        return None
    if not isinstance(u, dict):
        raise ImportFormatError(f"{where}: expected an object, found {type(u).__name__}")
    cached = count(u.get("prompt_tokens_details"), "cached_tokens", where)
    if cached is None:
        cached = count(u, "prompt_cache_hit_tokens", where)
    return Usage(
        prompt_tokens=count(u, "prompt_tokens", where),
        cached_tokens=cached,
        output_tokens=count(u, "completion_tokens", where),
        reasoning_tokens=count(u.get("completion_tokens_details"), "reasoning_tokens", where),
    )


def completion_sent(m: object, where: str) -> Sent:
    """The usage and model a mini-swe-agent reply keeps in ``extra.response`` (the raw reply)."""
    extra = m.get("extra") if isinstance(m, dict) else None
    response = extra.get("response") if isinstance(extra, dict) else None
    if not isinstance(response, dict):
        return Sent()
    model = response.get("model")
    return Sent(
        usage=openai_usage(response.get("usage"), f"{where}.extra.response.usage"),
        model=model if isinstance(model, str) else "",
    )
