"""The strategies the turn loop (``agent.loop``) runs, as functions of the agent: the planner
turn, a sub-agent, compaction (by hand, or automatic near the ceiling), hygiene folds, a model
switch and the answer to a repeated look; and the texts they send.

Hygiene folds replace a tool result the model no longer needs with a one-line note (``result.fold``):
the log keeps the original, ``recall`` brings it back. Two rules:

* a failed attempt: an error result of a tool that later succeeded on the same target (path,
  command or pattern) in the same context;
* a stale read: an ``fs-read`` of a file that was later read whole again, written or edited.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from nodwyn.agent import ends
from nodwyn.agent.named import with_named_files
from nodwyn.agent.ports import Turns
from nodwyn.agent.state import ResultRecord
from nodwyn.agent.tools import SUB_AGENT, Outcome, Tool, run_call
from nodwyn.agent.tools.args import parse_arguments
from nodwyn.agent.tools.base import fail
from nodwyn.errors import NotFoundError, ToolError, did_you_mean
from nodwyn.values.arguments import ArgumentsError, load_arguments
from nodwyn.values.content import ToolCall
from nodwyn.values.events import CtxClose, CtxOpen, GatePlan, ModelSwitch, Note, ResultFold, UserMsg
from nodwyn.values.model import ModelEntry
from nodwyn.values.recipe import Recipe
from nodwyn.window import TurnOptions

# A turn starts with a compaction once the last request was past high water (trimming could not
# shrink it) and past this share of the ceiling.
AUTO_COMPACT = 0.9

PLANNER_ASK = "Before acting, write the plan for this task: the steps you will take, one per line."
NOTE_ASK = (
    "Write a handover note so this task can continue in a fresh context: what was asked, what is "
    "done, what remains, and the facts needed (files, findings, commands). Plain text, no tool calls."
)
NOTE_SYSTEM_HEAD = "# Handover note (from the conversation so far)"
CONTINUE_ASK = "Continue the task from the handover note in your instructions."
SUB_AGENT_SYSTEM = (
    "You are a sub-agent. Do the task you are given with the tools offered, then answer with what "
    "you found, in a few lines: that answer is all the caller will see."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Fold:
    target: int
    text: str


def hygiene_folds(records: Sequence[ResultRecord], folded: Iterable[int], ctx: str) -> list[Fold]:
    """The folds due in ``ctx`` now, oldest first; ``folded`` are seqs already folded."""
    done = set(folded)
    mine = [r for r in records if r.ctx == ctx]
    folds: list[Fold] = []
    for i, r in enumerate(mine):
        if r.seq in done:
            continue
        later = [x for x in mine[i + 1 :] if not x.error]
        if r.error:
            fixed = next((x for x in later if x.name == r.name and x.target == r.target), None)
            if fixed is not None:
                why = f"failed {r.name} attempt folded (superseded at seq {fixed.seq}): {r.first_line[:160]}"
                folds.append(Fold(target=r.seq, text=f"[{why}; recall seq {r.seq} to see it]"))
        elif r.name == "fs-read" and r.path is not None:
            newer = next((x for x in later if x.path == r.path and _replaces_read(x)), None)
            if newer is not None:
                why = f"stale read of {r.path} folded ({newer.name} at seq {newer.seq})"
                folds.append(Fold(target=r.seq, text=f"[{why}; recall seq {r.seq} to see it]"))
    return folds


def _replaces_read(r: ResultRecord) -> bool:
    """A result that makes an earlier read of its file stale: a whole read, a write or an edit."""
    return (r.name == "fs-read" and r.whole) or r.name in ("fs-write", "fs-edit")


def note_system(note: str, base: str) -> str:
    """A compaction narrowing's system prompt: it starts from the note, then the session's own."""
    return f"{NOTE_SYSTEM_HEAD}\n{note.strip()}\n\n{base}"


def new_context(agent: Turns, kind: str) -> str:
    """A context id no earlier context of the session has: named by the seq its ``ctx.open``
    gets. (Ids were numbered by the contexts opened before, which a session resumed from its
    start point does not read; an old log's ``KIND-N`` has N below the seq of its own open.)"""
    return f"{kind}-{agent.log.last_seq + 1}"


def plan(agent: Turns) -> str:
    """A planner turn: the same conversation, no tools offered; its reply is recorded as the plan."""
    agent.append(UserMsg(text=PLANNER_ASK))
    _, response = agent.request(TurnOptions(no_tools=True))
    text = response.text.strip()
    if text:
        agent.append(GatePlan(text=text))
    else:
        agent.display.notice("the planner turn wrote no plan; going on without one")
    return text


def sub_agent(agent: Turns, parent: str, call: ToolCall) -> Outcome:
    """A sub-agent in a context of its own, offered the tools the call names (fs-read by default);
    its final answer comes back to ``parent`` as the call's one result."""
    tools = agent.settings.tools
    try:
        args = parse_arguments(tools[SUB_AGENT].spec, call.arguments)
    except ToolError as exc:
        return fail(str(exc))
    task = args["task"]
    if not task.strip():
        return fail('sub-agent: "task" is empty; say what the sub-agent should do')
    wanted = args.get("tools", ["fs-read"])
    unknown = sorted(set(wanted) - set(tools) | ({SUB_AGENT} & set(wanted)))
    if unknown:
        return fail(f"sub-agent: cannot offer {', '.join(unknown)}; pick from the catalog")
    sub_id = new_context(agent, "sub")
    offered = sorted(wanted)
    opened = CtxOpen(
        id=sub_id, kind="sub", system=SUB_AGENT_SYSTEM, offered_tools=tuple(offered), parent_call=call.id
    )
    agent.append(opened, ctx=parent)
    agent.append(UserMsg(text=task), ctx=sub_id)
    result = agent.run(sub_id, offered=offered)
    answer = result.text or f"(the sub-agent ended without an answer: {result.stopped})"
    agent.append(CtxClose(id=sub_id, result=answer), ctx=parent)
    return Outcome(text=answer, error=not result.text)


def compact(agent: Turns) -> str:
    """Ask for a note (a headroom request, no tools), then narrow under a system prompt that
    starts from it. The old conversation stays in the log; later windows start at the note."""
    parent = agent.state.ctx
    agent.append(UserMsg(text=NOTE_ASK), ctx=parent)
    _, response = agent.request(TurnOptions(no_tools=True, headroom=True), parent)
    note = response.text.strip() or "(the model wrote no note; the task continues from the log)"
    new = new_context(agent, "compact")
    system = note_system(note, agent.settings.recipe.system)
    agent.append(CtxOpen(id=new, kind="narrow", system=system, lasting=True), ctx=parent)
    agent.append(UserMsg(text=CONTINUE_ASK), ctx=new)
    return note


def compact_if_due(agent: Turns) -> bool:
    """Compact before a turn when the last request came near the ceiling and trimming could not
    shrink it."""
    limits = agent.settings.recipe.limits
    if agent.state.last_estimate <= max(limits.high_water, AUTO_COMPACT * limits.ceiling):
        return False
    agent.display.notice(
        f"the last request (~{agent.state.last_estimate} tokens) came near the window's ceiling "
        f"({limits.ceiling}) and trimming cannot shrink it; compacting first"
    )
    compact(agent)
    return True


def hygiene(agent: Turns, *, force: bool = False) -> list[int]:
    """Fold failed attempts and stale reads, at a turn boundary once the window is past low water
    (each fold moves the prefix, so they wait until the room is worth it)."""
    state = agent.state
    if not force and state.last_estimate < agent.settings.recipe.limits.low_water:
        return []
    folds = hygiene_folds(state.results, state.folded, state.ctx)
    for fold in folds:
        agent.append(ResultFold(target=fold.target, text=fold.text))
    return [f.target for f in folds]


def switch_model(agent: Turns, name: str) -> ModelEntry:
    """Switch to model entry ``name``, checked now (configured, its credential and extra at
    hand) rather than at the next request."""
    models = agent.settings.models
    if name not in models:
        raise NotFoundError(
            f"model {name!r} is not configured{did_you_mean(name, models)} "
            f"(known: {', '.join(sorted(models))}); see `nodwyn models list`"
        )
    if agent.check_model is not None:
        agent.check_model(models[name])
    resized = resized_recipe(agent, models[name])
    agent.append(ModelSwitch(model=name, recipe=resized))
    if resized is not None:
        agent.settings = replace(agent.settings, recipe=resized)
    return agent.model


def resized_recipe(agent: Turns, model: ModelEntry) -> Recipe | None:
    """The session's recipe with the window sized for ``model``'s context (the limits a session
    on it would get: ``settings.limits_for``), or None when its context is the recipe's (ADR 0300).
    A context too small for any window is refused here, in one line, before the switch is
    recorded (``limits_for`` raises ``ConfigError``)."""
    recipe = agent.settings.recipe
    limits_for = agent.settings.limits_for
    if limits_for is None or model.context_size == recipe.context_size:
        return None
    return replace(recipe, limits=limits_for(model), context_size=model.context_size)


def repeats(tools: Mapping[str, Tool], call: ToolCall, previous: ToolCall | None) -> bool:
    """The same look (a tool that changes nothing) with the same arguments as the call just
    answered: a small model's loop. Its result is already in the conversation."""
    tool = tools.get(call.name)
    if previous is None or tool is None or tool.mutating or call.name == SUB_AGENT:
        return False
    if call.name != previous.name:
        return False
    try:
        return bool(load_arguments(call.arguments) == load_arguments(previous.arguments))
    except ArgumentsError:
        return call.arguments == previous.arguments


def repeated(call: ToolCall) -> Outcome:
    """The answer to a repeated call, which is not run again: what the model needs is already above."""
    return fail(
        f"{call.name} was just called with these same arguments and its result is above; "
        "answer from it, or make a different call"
    )


def outcome_for(
    agent: Turns,
    ctx: str,
    call: ToolCall,
    offered: Sequence[str] | None,
    previous: ToolCall | None,
    cut_at: int | None,
) -> Outcome:
    """What answers one call: a call cut at the output cap (``cut_at``: the reply's output tokens)
    is not run; a repeated look, a sub-agent, or the tool itself."""
    tools = agent.settings.tools
    if cut_at is not None and not ends.whole(call.arguments):
        return ends.cut_outcome(call, cut_at)
    if repeats(tools, call, previous):
        return repeated(call)
    if call.name == SUB_AGENT and SUB_AGENT in tools and (offered is None or SUB_AGENT in offered):
        return sub_agent(agent, ctx, call)
    return run_call(call, tools, agent.tool_context, offered)


def with_named(agent: Turns, text: str, *, first: bool) -> str:
    """A turn's message with the files it names after it, and on the session's ``first`` turn (no
    request yet: a resume's is not) the top folder, when the session's settings ask for it
    (in-process models, ADRs 0442, 0444)."""
    if not agent.settings.named_files:
        return text
    return with_named_files(text, agent.settings.tools, agent.tool_context, listing=first)


def arrived_notes(agent: Turns, ctx: str) -> None:
    """Lines that arrived between steps (an MCP server's list_changed): logged and shown, sent
    nowhere."""
    for text in agent.notes() if agent.notes is not None else ():
        agent.append(Note(text=text), ctx=ctx)
        agent.display.notice(text)
