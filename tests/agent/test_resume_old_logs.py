"""Every earlier session log still replays, and goes on replaying once it is
resumed on this build. Each fixture log an earlier release wrote (``tests/data/fixture_logs``) is
copied, resumed as ``nodwyn resume`` resumes a session (from the start point its last request
recorded, under this build's recipe: the current version, the ``kept_headers`` flag, this build's
sizing and origins), and sent one more turn. Every request it recorded before keeps its digest and
its recipe version, and the new one replays too."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from nodwyn.agent.loop import Agent
from nodwyn.agent.settings import AgentSettings
from nodwyn.agent.tools import builtin_tools, catalog
from nodwyn.compose.config import WindowConfig, load_config
from nodwyn.compose.limits import session_limits
from nodwyn.compose.setup import BASE_SYSTEM, Backends
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.record import last_model, resume_session
from nodwyn.replay.exact import verify_all
from nodwyn.values.model import ModelEntry
from nodwyn.values.recipe import CURRENT_VERSION, EXTRA_FLAGS, Recipe

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixture_logs"
KINDS = sorted(p.name for p in FIXTURES.iterdir() if (p / "sessions").is_dir())


@pytest.mark.parametrize("kind", KINDS)
def test_an_earlier_log_resumed_on_this_build_keeps_every_digest(
    kind: str, tmp_path: Path, workspace: Path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURES / kind, home, ignore=shutil.ignore_patterns("golden.json", "transcript.txt"))
    golden = {
        row["seq"]: (row["digest"], row["recipe"])
        for row in orjson.loads((FIXTURES / kind / "golden.json").read_bytes())["requests"]
    }
    store = Store(home)
    [sid] = store.ids()
    with store.open(sid) as log:
        name = last_model(log) or "m"
    with FakeServer(api="openai-chat", script=[{"text": "Resumed."}]) as fake:
        model = ModelEntry(
            name=name, api="openai-chat", model="fake-model", base_url=fake.url, context_size=32000
        )
        tools = builtin_tools()
        recipe = Recipe(
            version=CURRENT_VERSION,
            system=BASE_SYSTEM,
            tools=catalog(tools.values()),
            limits=session_limits(WindowConfig(), model),
            context_size=model.context_size,
            extra_flags=EXTRA_FLAGS,
        )
        log = resume_session(store, sid, recipe, name)
        env = {"HOME": str(tmp_path)}
        backends = Backends(env, load_config(env))
        settings = AgentSettings(
            recipe=recipe, tools=tools, models={name: model}, model=name, workspace=workspace
        )
        agent = Agent(log=log, settings=settings, backend_for=backends, approve=lambda tool, what: False)
        try:
            agent.settle()
            assert agent.user_turn("Anything else?").text == "Resumed."
        finally:
            backends.close()
            log.close()
    with store.open(sid) as log:
        verdicts = list(verify_all(log))
    refused = [(v.seq, str(v.error)) for v in verdicts if v.error is not None]
    assert not refused, refused
    got = {v.seq: (v.replayed.digest, v.replayed.recipe_version) for v in verdicts if v.replayed is not None}
    assert {seq: got[seq] for seq in golden} == golden
    new = sorted(set(got) - set(golden))
    assert len(new) == 1 and new[0] > max(golden) and got[new[0]][1] == CURRENT_VERSION
