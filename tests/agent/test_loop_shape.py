"""The agent loop as one readable piece: ``Agent`` takes a log, one frozen ``AgentSettings`` and its
ports; the strategies are functions beside it; the ``Backend`` protocol (with ``close``) lives in
``transport``; the agent needs nothing of the composition layer to run a session."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest

from nodwyn.agent import loop, strategies
from nodwyn.agent.loop import Agent
from nodwyn.agent.settings import AgentSettings
from nodwyn.agent.tools import builtin_tools, catalog
from nodwyn.errors import NotFoundError
from nodwyn.log import Store
from nodwyn.record import start_session
from nodwyn.replay.exact import verify_all
from nodwyn.testing import ScriptedBackend, recipe
from nodwyn.transport.backend import Backend
from nodwyn.transport.http import HttpBackend
from nodwyn.transport.local import LocalBackend

STRATEGIES = ("plan", "sub_agent", "compact", "compact_if_due", "hygiene", "switch_model", "repeats")


def test_the_loop_is_one_short_file_and_the_strategies_are_functions_beside_it() -> None:
    assert len(Path(loop.__file__).read_text().splitlines()) <= 180
    methods = {n for n, v in vars(Agent).items() if inspect.isfunction(v) and n != "__init__"}
    assert methods == {"append", "request", "settle", "user_turn", "run", "stop", "run_tool"}
    assert all(inspect.isfunction(getattr(strategies, name)) for name in STRATEGIES)
    assert not set(STRATEGIES) & set(vars(Agent))
    params = inspect.signature(Agent).parameters
    assert list(params) == ["log", "settings", "backend_for", "approve", "display", "check_model", "notes"]


def test_every_backend_has_the_protocols_send_and_close() -> None:
    wanted = {name for name in vars(Backend) if name in ("send", "close")}
    assert wanted == {"send", "close"}
    for cls in (HttpBackend, LocalBackend, ScriptedBackend):
        assert all(callable(getattr(cls, name, None)) for name in wanted), cls


def test_the_settings_value_is_frozen_and_keyword_only(tmp_path: Path) -> None:
    settings = AgentSettings(recipe=recipe(), tools={}, models={}, model="m", workspace=tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.max_steps = 3  # type: ignore[misc]  # a frozen value assigned, on purpose
    with pytest.raises(TypeError):
        AgentSettings(recipe(), {}, {}, "m", tmp_path)  # type: ignore[call-arg]  # keyword-only, on purpose


def test_an_agent_made_by_hand_runs_a_planned_turn_with_a_tool_and_replays(tmp_path: Path) -> None:
    """No config, no extension files, no compose: a log, the settings value and a backend."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("print(1)\n")
    tools = builtin_tools()
    rec = recipe(tools=catalog(tools.values()))
    store = Store(tmp_path / "home", fsync=False)
    script: list[dict[str, Any]] = [
        {"text": "1. read a.py\n2. answer"},
        {"calls": [{"name": "fs-read", "arguments": {"path": "a.py"}}]},
        {"text": "It prints 1."},
    ]
    with ScriptedBackend(script) as backend:
        settings = AgentSettings(
            recipe=rec, tools=tools, models={"fake": backend.settings}, model="fake", workspace=ws
        )
        log = start_session(store, rec, "fake")
        agent = Agent(log=log, settings=settings, backend_for=lambda _: backend, approve=lambda t, w: False)
        try:
            result = agent.user_turn("What does a.py print?", plan_first=True)
            assert result.text == "It prints 1." and result.requests == 2
            with pytest.raises(NotFoundError, match="did you mean 'fake'"):
                strategies.switch_model(agent, "fak")
            kinds = [e.kind for e in log.read()]
            assert kinds.count("llm.req") == 3 and "gate.plan" in kinds and "tool.result" in kinds
            assert "model.switch" not in kinds
            assert [v.error for v in verify_all(log)] == [None, None, None]
        finally:
            log.close()
