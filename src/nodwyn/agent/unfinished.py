"""A reply that ends a turn unfinished, asked to go on (ADR 0445).

A small in-process model often stops short of the task: an empty reply right after an edit that
worked, an answer that writes a tool call as text in a code block (prose the parser rightly
leaves as prose, so nothing ran), or an answer that shows the changed lines of a file it read
without changing the file. Instead of ending the turn there, the loop appends a ``note`` saying
why and a user message asking for the answer or the next call, at most ``NUDGES`` times a turn
and only with a step left (``AgentSettings.nudges``: in-process models). Both are in the log, so
replay rebuilds exactly what the model was shown; past that, such a reply ends the turn as before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from nodwyn.agent.ends import End, of_reply
from nodwyn.agent.named import named_paths
from nodwyn.agent.ports import Turns
from nodwyn.agent.settings import EMPTY_REPLY
from nodwyn.agent.tools import run_call
from nodwyn.values.content import ToolCall
from nodwyn.values.events import Note, UserMsg
from nodwyn.values.request import BLOCK_KEY, Response, ToolSpec

EMPTY = "Your reply was empty. If the task is done, answer the user now; if not, make the next tool call."
EMPTIED = "the model answered with no text and no tool calls after a tool result; asked it to go on"
_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.S)
_SECTION = re.compile(r"^--- (\S+)\n(.*?)(?=```|\n\n\n|\n--- |\Z)", re.S | re.M)
NUDGES = 2  # asks a turn at most (a second ask answered a first with a call written as text)
SHARED_LINE = 6  # a block's line this long (stripped) that the file also has ties the block to it


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    note: str  # why, for the log and the person
    text: str  # the user message the model is sent


def as_text_call(text: str, tools: Mapping[str, ToolSpec]) -> tuple[str, str | None] | None:
    """The offered tool a code block of ``text`` calls as text, if any, and the call's JSON when it
    can be read: a JSON object naming it (``{"name": "fs-grep", "arguments": {...}}``), or a line
    that starts with its name (``shell "python3 t.py"``: the rest of the line is the argument of a
    tool that requires one string)."""
    for m in _FENCE.finditer(text):
        body = m.group(1).strip()
        try:
            value = json.loads(body)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict) and value.get("name") in tools:
            args = value.get("arguments")
            shown = {"name": value["name"], "arguments": args} if isinstance(args, dict) else None
            return str(value["name"]), None if shown is None else json.dumps(shown, ensure_ascii=False)
        first, _, rest = body.split("\n", 1)[0].partition(" ")
        if first in tools:
            return first, _one_argument(first, tools[first], _word(rest.strip()))
    return None


def _word(rest: str) -> str:
    """One argument written after a tool's name: a quoted string, or one word ('' otherwise)."""
    if len(rest) > 1 and rest[0] in "'\"" and rest[-1] == rest[0] and rest[0] not in rest[1:-1]:
        return rest[1:-1]
    return "" if any(c.isspace() for c in rest) else rest


def _one_argument(name: str, spec: ToolSpec, value: str) -> str | None:
    props = spec.parameters.get("properties", {})
    required = [k for k in spec.parameters.get("required", []) if BLOCK_KEY not in props.get(k, {})]
    if not value or len(required) != 1 or props.get(required[0], {}).get("type") != "string":
        return None
    return json.dumps({"name": name, "arguments": {required[0]: value}}, ensure_ascii=False)


def shown_change(text: str, files: Mapping[str, tuple[str, ...]]) -> str | None:
    """The file a code block of ``text`` shows changed. ``files``: path -> its text now, then the
    texts the conversation showed of it; the block has a line of one of them (at least
    SHARED_LINE characters, stripped), or follows a ``--- PATH`` line as the task's message shows
    files (``agent.named``), and has a line the file lacks now."""
    blocks: list[tuple[str | None, str]] = [(None, m.group(1)) for m in _FENCE.finditer(text)]
    blocks += [(m.group(1), m.group(2)) for m in _SECTION.finditer(text) if m.group(1) in files]
    for named, block in blocks:
        lines = {ln.strip() for ln in block.splitlines() if ln.strip()}
        for path, (now, *before) in files.items():
            if named not in (None, path):
                continue
            have = {ln.strip() for ln in now.splitlines()}
            seen = have.union(*({ln.strip() for ln in b.splitlines()} for b in before))
            new = {ln for ln in lines - have if not ln.startswith(("#", "//"))}  # a "# slug.py" label
            if (named or any(len(ln) >= SHARED_LINE and ln in seen for ln in lines)) and new:
                return path
    return None


def shown_in(message: str, path: str) -> str:
    """The text a message shows of ``path`` under its ``--- PATH`` line (``agent.named``), or ''."""
    at = message.find(f"\n--- {path}\n")
    if at < 0:
        return ""
    start = at + len(path) + 6
    end = message.find("\n--- ", start)
    return message[start:] if end < 0 else message[start:end]


def text_call(name: str, call: str | None = None) -> Ask:
    how = f" as a tool call: {call}" if call else " as a tool call"
    return Ask(
        note="the model wrote a tool call as text instead of calling it; asked it to go on",
        text=f"Your reply wrote a {name} call as text in a code block, so nothing was run. Make "
        f"the call now{how}",
    )


def change_shown(path: str, tools: Collection[str] = ()) -> Ask:
    edits = [t for t in ("fs-edit", "fs-write") if t in tools]
    how = " or ".join(f"call {t}" for t in edits) or "make a tool call"
    return Ask(
        note=f"the model showed changed lines of {path} without changing it; asked it to go on",
        text=f"Your reply shows code for {path} that {path} does not hold, so {path} is unchanged. "
        f"If the task is to change it, {how} on {path} now; if not, answer the user.",
    )


def ask_for(
    response: Response,
    end: End | None,
    tools: Mapping[str, ToolSpec],
    files: Mapping[str, tuple[str, ...]],
    *,
    called: bool,
) -> Ask | None:
    """What a reply without calls is asked instead of ending the turn (None: it ends)."""
    if end is not None:
        if end.stopped == EMPTY_REPLY and called:
            return Ask(note=EMPTIED, text=EMPTY)
        return None
    found = as_text_call(response.text, tools)
    if found is not None:
        return text_call(*found)
    path = shown_change(response.text, files)
    return None if path is None else change_shown(path, tools)


def files_seen(agent: Turns, ctx: str) -> dict[str, tuple[str, ...]]:
    """The files ``ctx`` read and those its latest message names, but none it wrote or edited
    (an answer that shows what it wrote, a little reworded, is no change left undone): each as
    fs-read shows it now, then as that message showed it (what an answer's block is compared with)."""
    said = agent.state.said.get(ctx, "")
    mine = [r for r in agent.state.results if r.ctx == ctx and r.path and not r.error]
    changed = {r.path for r in mine if r.name in ("fs-write", "fs-edit")}
    paths = [r.path for r in mine if r.path] + named_paths(said, agent.tool_context)
    files: dict[str, tuple[str, ...]] = {}
    for path in dict.fromkeys(p for p in paths if p not in changed):
        call = ToolCall(id="seen", name="fs-read", arguments=json.dumps({"path": path}))
        out = run_call(call, agent.settings.tools, agent.tool_context)
        if not out.error:
            files[path] = (out.text, shown_in(said, path))
    return files


def nudged(
    agent: Turns,
    ctx: str,
    response: Response,
    offered: Sequence[str] | None,
    previous: ToolCall | None,
    left: int,
) -> bool:
    """Whether a reply that would end the turn in ``ctx`` is asked to go on instead (the note and
    the user message appended, and shown): a reply without calls, with ``left`` steps to go, on a
    session whose settings ask for it; ``previous``: the turn's last call so far."""
    if response.calls or left < 1 or not agent.settings.nudges:
        return False
    end = of_reply(response, agent.model.name)
    files = files_seen(agent, ctx) if "```" in response.text or "--- " in response.text else {}
    tools = {n: t.spec for n, t in agent.settings.tools.items() if offered is None or n in offered}
    ask = ask_for(response, end, tools, files, called=previous is not None)
    if ask is None:
        return False
    agent.append(Note(text=ask.note), ctx=ctx)
    agent.display.notice(ask.note)
    agent.append(UserMsg(text=ask.text), ctx=ctx)
    return True
