"""An empty reply after the turn's tool results (ADR 0445): with ``AgentSettings.nudges``
(in-process models), the turn goes on with a logged user message asking for the answer or the
next call, at most NUDGES times a turn; past that, an empty reply before any call, or one at the step limit
ends the turn as before (exit 17). Over a real fake (ScriptedBackend): the request that follows
the nudge is checked as it went over the wire, and the log replays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nodwyn.agent import unfinished
from nodwyn.agent.loop import Agent
from nodwyn.agent.settings import EMPTY_REPLY, AgentSettings, TurnResult
from nodwyn.agent.tools import builtin_tools, catalog
from nodwyn.compose.config import BUILTINS
from nodwyn.compose.setup import open_agent
from nodwyn.log import Store
from nodwyn.record import start_session
from nodwyn.replay.exact import verify_all
from nodwyn.testing import ScriptedBackend, Step, isolated_env, recipe
from nodwyn.values.content import TextPart, UserMessage
from nodwyn.values.events import NOTE, USER_MSG, decode
from nodwyn.values.request import Request

READ: dict[str, Any] = {"calls": [{"name": "fs-read", "arguments": {"path": "a.py"}}]}


def _last_user(request: Request) -> str:
    m = request.messages[-1]
    assert isinstance(m, UserMessage)
    return "".join(p.text for p in m.parts if isinstance(p, TextPart))


def _turn(
    tmp_path: Path, script: list[Step], *, nudge: bool = True, steps: int = 24
) -> tuple[TurnResult, list[Any]]:
    ws = tmp_path / "ws"
    ws.mkdir(parents=True)
    (ws / "a.py").write_text("X = 3  # three\n")
    tools = builtin_tools()
    rec = recipe(tools=catalog(tools.values()))
    store = Store(tmp_path / "home", fsync=False)
    with ScriptedBackend(script) as backend:
        settings = AgentSettings(
            recipe=rec,
            tools=tools,
            models={"fake": backend.settings},
            model="fake",
            workspace=ws,
            nudges=nudge,
            max_steps=steps,
        )
        log = start_session(store, rec, "fake")
        agent = Agent(log=log, settings=settings, backend_for=lambda _: backend, approve=lambda t, w: True)
        try:
            result = agent.user_turn("What is X in a.py?")
            assert all(v.error is None for v in verify_all(log))
            events = [(e.kind, decode(e)) for e in log.read(1)]
        finally:
            log.close()
    return result, events


def test_an_empty_reply_after_a_call_is_asked_once_to_go_on_and_the_turn_answers(tmp_path: Path) -> None:
    script = [
        Step(reply=READ),
        Step(reply={"text": ""}),
        Step(reply={"text": "X is 3."}, expect=lambda r: _last_user(r).endswith(unfinished.EMPTY)),
    ]
    result, events = _turn(tmp_path, script)
    assert result.text == "X is 3." and result.stopped is None and result.requests == 3
    kinds = [k for k, _ in events]
    nudge_at = kinds.index(USER_MSG, kinds.index(USER_MSG) + 1)  # the second user message
    assert kinds[nudge_at - 1] == NOTE and events[nudge_at - 1][1].text == unfinished.EMPTIED
    assert events[nudge_at][1].text == unfinished.EMPTY  # in the log, so replay rebuilds what was sent


def test_empty_replies_past_the_asks_of_a_turn_end_it_as_an_empty_reply(tmp_path: Path) -> None:
    script = [Step(reply=READ), *(Step(reply={"text": ""}) for _ in range(unfinished.NUDGES + 1))]
    result, events = _turn(tmp_path, script)
    assert result.stopped == EMPTY_REPLY and result.requests == unfinished.NUDGES + 2
    assert sum(1 for k, p in events if k == USER_MSG and p.text == unfinished.EMPTY) == unfinished.NUDGES


def test_no_nudge_before_any_call_at_the_step_limit_or_without_the_setting(tmp_path: Path) -> None:
    first, _ = _turn(tmp_path / "a", [Step(reply={"text": ""})])
    assert first.stopped == EMPTY_REPLY and first.requests == 1  # nothing done yet: nothing to go on with
    last, _ = _turn(tmp_path / "b", [Step(reply=READ), Step(reply={"text": ""})], steps=2)
    assert last.stopped == EMPTY_REPLY and last.requests == 2  # no step left for the nudge
    off, events = _turn(tmp_path / "c", [Step(reply=READ), Step(reply={"text": ""})], nudge=False)
    assert off.stopped == EMPTY_REPLY and all(getattr(p, "text", "") != unfinished.EMPTY for _, p in events)


def test_an_answer_that_writes_a_call_as_text_is_asked_once_to_make_it(tmp_path: Path) -> None:
    """The README's resumed question was answered with a fenced fs-grep the parser leaves as prose."""
    call = '{"name": "fs-grep", "arguments": {"pattern": "X"}}'
    as_text = f"I will search for it:\n```python\n{call}\n```"
    script = [
        Step(reply={"text": as_text}),
        Step(reply=READ, expect=lambda r: _last_user(r).endswith(unfinished.text_call("fs-grep", call).text)),
        Step(reply={"text": "X is 3."}),
    ]
    result, events = _turn(tmp_path, script)
    assert result.text == "X is 3." and result.stopped is None and result.requests == 3
    notes = [p.text for k, p in events if k == NOTE]
    assert notes == [unfinished.text_call("fs-grep").note]


def test_an_answer_that_shows_a_read_file_changed_is_asked_once_to_change_it(tmp_path: Path) -> None:
    """A run of the realistic set answered with the fixed function in a code block, file unchanged."""
    shown = "The fix:\n```python\nX = 3  # three\nY = X + 1\n```"
    reworded = "Done:\n```python\nX = 3  # three\nY = 1 + X\n```"  # a.py is written now: no ask
    edit = {
        "calls": [
            {"name": "fs-write", "arguments": {"path": "a.py", "content": "X = 3  # three\nY = X + 1\n"}}
        ]
    }
    script = [
        Step(reply=READ),
        Step(reply={"text": shown}),
        Step(
            reply=edit,
            expect=lambda r: _last_user(r).endswith(
                unfinished.change_shown("a.py", ("fs-edit", "fs-write")).text
            ),
        ),
        Step(reply={"text": reworded}),
    ]
    result, events = _turn(tmp_path, script)
    assert result.text == reworded and result.stopped is None and result.requests == 4
    assert [p.text for k, p in events if k == NOTE] == [unfinished.change_shown("a.py").note]
    assert (
        "call fs-edit or call fs-write on a.py now"
        in unfinished.change_shown("a.py", ("fs-edit", "fs-write")).text
    )
    assert (tmp_path / "ws" / "a.py").read_text() == "X = 3  # three\nY = X + 1\n"


def test_what_counts_as_a_file_shown_changed() -> None:
    was = "def page_count(items, per_page):\n    return items // per_page\n"
    files = {"pages.py": (was,)}
    fixed = "```python\ndef page_count(items, per_page):\n    return -(-items // per_page)\n```"
    assert unfinished.shown_change(fixed, files) == "pages.py"
    assert unfinished.shown_change(fixed.replace("-(-items // per_page)", "items // per_page"), files) is None
    assert unfinished.shown_change("```python\nprint(1)\n```", files) is None  # no line of the file
    assert unfinished.shown_change(f"```python\n# pages.py\n{was}```", files) is None  # a label line
    # a file shown as the task's message shows files, with only a closing fence (rename-across)
    main = {"main.py": ("from cart import calc_total\n\nprint(calc_total([3]))\n",)}
    section = "Here's the updated content:\n\n--- main.py\nfrom cart import total_price\n```\n\nDone."
    assert unfinished.shown_change(section, main) == "main.py"
    assert unfinished.shown_change(section.replace("main.py", "other.py"), main) is None
    # a file the model clobbered is tied to the block by the text the task's message showed of it
    message = f"Fix pages.py.\n\nThe files named above, as they are now:\n\n--- pages.py\n{was}"
    assert unfinished.shown_in(message, "pages.py") == was and unfinished.shown_in(message, "a.py") == ""
    assert unfinished.shown_change(fixed, {"pages.py": ("<|args|>", was)}) == "pages.py"
    assert unfinished.shown_change(fixed, {"pages.py": ("<|args|>", "")}) is None


def test_what_counts_as_a_call_written_as_text() -> None:
    tools = {t.spec.name: t.spec for t in builtin_tools("search").values()}
    assert unfinished.as_text_call('```\nshell "python3 t.py"\n```', tools) == (
        "shell",
        '{"name": "shell", "arguments": {"command": "python3 t.py"}}',
    )
    assert unfinished.as_text_call("```sh\nfs-grep fakes src\n```", tools) == ("fs-grep", None)  # 1 of 2 args
    assert unfinished.as_text_call("```sh\nfs-edit slug.py\n```", tools) == (
        "fs-edit",
        '{"name": "fs-edit", "arguments": {"path": "slug.py"}}',  # its block's fields are not arguments
    )
    assert unfinished.as_text_call('```\n{"name": "fs-read", "arguments": {}}\n```', tools) == (
        "fs-read",
        '{"name": "fs-read", "arguments": {}}',
    )
    for prose in ("```python\nprint(1)\n```", "Use fs-grep to search.", '```\n{"name": "teleport"}\n```'):
        assert unfinished.as_text_call(prose, tools) is None, prose
    assert unfinished.text_call("shell").text.endswith("Make the call now as a tool call")


def test_sessions_on_in_process_models_are_nudged_and_others_are_not(tmp_path: Path) -> None:
    """The entry's API profile decides (in process), never the model's name."""
    models = {
        "local-tiny": "",
        "chat": '[models.chat]\napi = "openai-chat"\nmodel = "m"\n'
        'base_url = "http://127.0.0.1:9"\ncontext_size = 32000\n',
    }
    for name, extra in models.items():
        root = tmp_path / name
        root.mkdir()
        (root / "config.toml").write_text(f'[control]\nmodel = "{name}"\n{extra}')
        opened = open_agent(env=isolated_env(root), workspace=root, yes=True)
        try:
            assert opened.agent.settings.nudges is (name in BUILTINS)
        finally:
            opened.close()
