"""OpenHands V1 SDK conversation stores (``<conversation>/events/event-NNNNN-<uuid>.json``).

One JSON file per event, in file-name order. ``SystemPromptEvent`` gives the system prompt and the
tool catalog (OpenAI function schemas); a ``MessageEvent`` from the user is a user message (from
the agent, a reply without calls); consecutive ``ActionEvent``s sharing an ``llm_response_id`` are
one reply (its text: their ``thought`` parts; its calls: their ``tool_call``s); an
``ObservationEvent`` (or ``AgentErrorEvent``/``UserRejectObservation``) is the result of its
``tool_call_id``. A bash observation is shown as the SDK shows it: ``metadata.prefix`` + ``output``
+ ``metadata.suffix`` (the exit-code line). ``Condensation`` events are the peer's summarising
condenser at work: the log keeps every event, so we leave them out and replay our own policies
over the whole conversation (ADR 0031); the run's notes count them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from nodwyn.errors import ImportFormatError
from nodwyn.imports.jsonfile import field, read_json, text_of
from nodwyn.imports.run import Reader, Run, Stand, user
from nodwyn.values.content import AssistantMessage, Message, ToolCall, ToolMessage
from nodwyn.values.request import ToolSpec, Usage

FORMAT = "openhands-v1"

# Events that never reach the model's view (state bookkeeping, or the peer's own condenser).
IGNORED = frozenset(
    {
        "Condensation",
        "CondensationRequest",
        "CondensationSummaryEvent",
        "ConversationStateUpdateEvent",
        "PauseEvent",
    }
)


def event_files(folder: Path) -> list[Path]:
    return sorted((folder / "events").glob("event-*.json"))


def is_conversation(folder: Path) -> bool:
    return (folder / "events").is_dir() and bool(event_files(folder))


def observation_text(obs: Any, where: str) -> tuple[str, bool]:
    """What the model was shown for an observation, and whether it reports a failure."""
    if not isinstance(obs, dict):
        raise ImportFormatError(f"{where}: expected an object")
    error = obs.get("error")
    text = ""
    for key in ("output", "content", "message"):
        if obs.get(key):
            text = text_of(obs[key], f"{where}.{key}")
            break
    if not text and isinstance(error, str):
        text = error
    failed = bool(error)
    meta = obs.get("metadata")
    if isinstance(meta, dict):
        text = f"{meta.get('prefix') or ''}{text}{meta.get('suffix') or ''}"
        code = meta.get("exit_code")
        failed = failed or (isinstance(code, int) and code not in (0, -1))
    return text, failed


def token_usages(folder: Path) -> tuple[dict[str, Usage], str]:
    """The agent's per-call usage from ``base_state.json`` by ``response_id``, and its model.

    ``prompt_tokens`` there is LiteLLM's count for Anthropic: the uncached input plus the cache
    read, without the cache write; the whole prompt is ``prompt_tokens + cache_write_tokens``
    (docs/imports.md). A folder without the file, or whose snapshot predates the usage, has none."""
    path = folder / "base_state.json"
    if not path.exists():
        return {}, ""
    doc = read_json(path)
    where = str(path)
    agent = doc.get("agent") if isinstance(doc, dict) else None
    llm = agent.get("llm") if isinstance(agent, dict) else None
    model = llm.get("model") if isinstance(llm, dict) else None
    stats = doc.get("stats") if isinstance(doc, dict) else None
    metrics = stats.get("service_to_metrics") if isinstance(stats, dict) else None
    default = metrics.get("default") if isinstance(metrics, dict) else None
    raw = default.get("token_usages") if isinstance(default, dict) else None
    out: dict[str, Usage] = {}
    for i, u in enumerate(raw if isinstance(raw, list) else []):
        w = f"{where}: stats.service_to_metrics.default.token_usages[{i}]"
        rid = field(u, "response_id", str, w)
        prompt = field(u, "prompt_tokens", int, w)
        read = field(u, "cache_read_tokens", int, w)
        write = field(u, "cache_write_tokens", int, w)
        out[rid] = Usage(
            prompt_tokens=prompt + write,
            cached_tokens=read,
            cache_write_tokens=write,
            output_tokens=field(u, "completion_tokens", int, w),
            reasoning_tokens=r if isinstance(r := u.get("reasoning_tokens"), int) else None,
        )
    return out, model if isinstance(model, str) else ""


class _Reader(Reader):
    """The conversation read so far (each message with the event it began with), the reply being
    gathered, and what the peer's condensations left out."""

    def __init__(self, usages: dict[str, Usage], model: str) -> None:
        super().__init__(model)
        self.usages = usages
        self.ids: list[str] = []  # the event each message of ``out`` began with
        self.batch: str | None = None  # llm_response_id of the reply being gathered
        self.condensations = 0
        self.forgotten: set[str] = set()
        self.offset = 0

    def event(self, e: Any, w: str, fallback_id: str) -> None:
        kind = field(e, "kind", str, w)
        handler = _HANDLERS.get(kind)
        if handler is None and kind in IGNORED:
            return
        if handler is None:
            raise ImportFormatError(
                f"{w}: unknown event kind {kind!r}; teach nodwyn/imports/openhands.py about it"
            )
        handler(self, e, w, str(e.get("id") or fallback_id))

    def add(self, message: Message, eid: str) -> None:
        self.out.append(message)
        self.ids.append(eid)

    def view(self) -> tuple[int | Stand, ...] | None:
        """What the SDK's view holds: after a condensation, the events not forgotten and the summary."""
        if not self.condensations:
            return None
        kept: list[int | Stand] = [
            *_matched(self.out, [i for i in range(len(self.out)) if self.ids[i] not in self.forgotten])
        ]
        if self.summary is not None:
            kept.insert(min(self.offset, len(kept)), self.summary)
        return tuple(kept)

    def new_reply(self, message: AssistantMessage, eid: str, rid: Any) -> None:
        self.reply(message, self.usages.get(rid) if isinstance(rid, str) else None, self.model)
        self.ids.append(eid)

    def system_prompt(self, e: Any, w: str, eid: str) -> None:
        if self.system is not None:
            raise ImportFormatError(f"{w}: a second system prompt")
        self.system = text_of(field(e, "system_prompt", dict, w).get("text"), f"{w}.system_prompt.text")
        self.tools = tuple(_tool(t, f"{w}.tools[{i}]") for i, t in enumerate(field(e, "tools", list, w)))
        self.batch = None

    def message(self, e: Any, w: str, eid: str) -> None:
        msg = field(e, "llm_message", dict, w)
        text = text_of(msg.get("content"), f"{w}.llm_message.content")
        if e.get("source") == "user":
            self.add(user(text), eid)
        else:
            self.new_reply(AssistantMessage(text=text), eid, e.get("llm_response_id"))
        self.batch = None

    def action(self, e: Any, w: str, eid: str) -> None:
        """A call; consecutive actions sharing an llm_response_id are one reply."""
        rid = e.get("llm_response_id")
        tc = field(e, "tool_call", dict, w)
        fn = field(tc, "function", dict, f"{w}.tool_call")
        call = ToolCall(
            id=field(e, "tool_call_id", str, w),
            name=field(fn, "name", str, f"{w}.tool_call.function"),
            arguments=field(fn, "arguments", str, f"{w}.tool_call.function"),
        )
        thought = text_of(e.get("thought"), f"{w}.thought")
        last = self.out[-1] if self.out else None
        if rid is not None and rid == self.batch and isinstance(last, AssistantMessage):
            text = last.text + ("\n" if last.text and thought else "") + thought
            self.out[-1] = AssistantMessage(text=text, calls=(*last.calls, call))
        else:
            self.new_reply(AssistantMessage(text=thought, calls=(call,)), eid, rid)
        self.batch = rid

    def observation(self, e: Any, w: str, eid: str) -> None:
        cid = field(e, "tool_call_id", str, w)
        text, failed = observation_text(field(e, "observation", dict, w), f"{w}.observation")
        self.answer(e, cid, text, failed, eid)

    def failure(self, e: Any, w: str, eid: str) -> None:
        """An AgentErrorEvent or UserRejectObservation: a failed result of its call."""
        cid = field(e, "tool_call_id", str, w)
        text = str(e.get("error") or e.get("rejection_reason") or e["kind"])
        self.answer(e, cid, text, True, eid)

    def answer(self, e: Any, cid: str, text: str, failed: bool, eid: str) -> None:
        tool_name = e.get("tool_name") or ""
        self.add(ToolMessage(call_id=cid, name=str(tool_name), text=text, error=failed), eid)
        self.batch = None

    def condensation(self, e: Any, w: str, eid: str) -> None:
        """The peer's condenser: its forgotten events leave the later views, its summary stands in."""
        self.condensations += 1
        gone = field(e, "forgotten_event_ids", list, w)
        self.forgotten.update(str(x) for x in gone)
        text = e.get("summary")
        if isinstance(text, str):
            of = tuple(i for i in range(len(self.out)) if self.ids[i] in self.forgotten)
            self.summary = Stand(message=user(text), why="condensation", of=of)
            raw_offset = e.get("summary_offset")
            # the offset counts the view's events, the system prompt event first
            self.offset = max(raw_offset - 1, 0) if isinstance(raw_offset, int) else 0
        self.why.append("condensation")


_HANDLERS: dict[str, Callable[[_Reader, Any, str, str], None]] = {
    "SystemPromptEvent": _Reader.system_prompt,
    "MessageEvent": _Reader.message,
    "ActionEvent": _Reader.action,
    "ObservationEvent": _Reader.observation,
    "AgentErrorEvent": _Reader.failure,
    "UserRejectObservation": _Reader.failure,
    "Condensation": _Reader.condensation,
}


def load(folder: Path, name: str) -> Run:
    files = event_files(folder)
    if not files:
        raise ImportFormatError(
            f"{folder}: no events/event-*.json files; is it an OpenHands conversation folder?"
        )
    reader = _Reader(*token_usages(folder))
    for f in files:
        reader.event(read_json(f), str(f), f.name)
    if reader.system is None:
        raise ImportFormatError(f"{folder}: no SystemPromptEvent; the conversation store is incomplete")
    n = reader.condensations
    notes = (f"{n} peer condensations left out of the conversation",) if n else ()
    return reader.run(name, FORMAT, str(folder), notes)


def _tool(t: Any, where: str) -> ToolSpec:
    fn = field(t, "function", dict, where) if "function" in t else t
    return ToolSpec(
        name=field(fn, "name", str, where),
        description=str(fn.get("description") or ""),
        parameters=fn.get("parameters") or {"type": "object", "properties": {}},
    )


def _matched(out: list[Message], kept: list[int]) -> list[int]:
    """``kept`` without the results whose call was forgotten: the SDK's view keeps tool calls and
    their results matched (``View.from_events`` drops the unmatched ones)."""
    calls = {c.id for i in kept if isinstance(m := out[i], AssistantMessage) for c in m.calls}
    return [i for i in kept if not (isinstance(m := out[i], ToolMessage) and m.call_id not in calls)]
