"""A plan's credential and an API key share api.openai.com/v1, and what one encrypted the other
may not read: a reasoning block's origin is
its model, its server by name when the entry names one, and always its address and credential.
Two entries with the same ``server`` label, host and model id, one on a ChatGPT plan's credential
and one on an API key, never receive each other's encrypted reasoning: not after switch_model,
not after a resume with the other model, and `nodwyn models test` gives back only its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nodwyn.agent import strategies
from nodwyn.compose.probe import probe_model
from nodwyn.compose.setup import Opened, open_agent
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.transport.credentials import Credential, Credentials, origin_of
from nodwyn.transport.http import HttpBackend
from nodwyn.values.content import Origin
from nodwyn.values.model import ModelEntry

REASONS = {"blocks": [{"type": "reasoning", "thinking": "the plan's own reasoning", "position": 0}]}


def _config(path: Path, url: str) -> None:
    entry = (
        'api = "responses"\nserver = "openai"\nmodel = "gpt-x"\nbase_url = "{url}"\n'
        "context_size = 200000\nkeep_reasoning = true\n"
    )
    path.write_text(
        '[control]\nmodel = "plan"\n\n'
        f'[models.plan]\n{entry.format(url=url)}credential = "PLAN_TOKEN"\n\n'
        f'[models.key]\n{entry.format(url=url)}credential = "API_KEY"\n'
    )


def _reasoning_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [it for it in body.get("input", []) if isinstance(it, dict) and it.get("type") == "reasoning"]


def _open(tmp_path: Path, workspace: Path, **kw: Any) -> Opened:
    env = {
        "NODWYN_HOME": str(tmp_path / "home"),
        "NODWYN_CONFIG": str(tmp_path / "config.toml"),
        "HOME": str(tmp_path),
        "PLAN_TOKEN": "plan-token-value",
        "API_KEY": "api-key-value",
    }
    return open_agent(env=env, workspace=workspace, **kw)


def test_the_origin_names_address_and_credential_also_under_a_server_label() -> None:
    base: dict[str, Any] = {"api": "responses", "model": "gpt-x", "context_size": 1000, "server": "openai"}
    plan = ModelEntry(name="plan", base_url="https://api.openai.com/v1", credential="PLAN", **base)
    key = ModelEntry(name="key", base_url="https://api.openai.com/v1", credential="KEY", **base)
    assert plan.origin == Origin(
        model="gpt-x", server="openai", url="https://api.openai.com/v1", credential="PLAN"
    )
    assert plan.origin != key.origin


def test_plan_and_key_under_one_server_label_never_get_each_others_reasoning(
    tmp_path: Path, workspace: Path
) -> None:
    script: list[dict[str, Any]] = [
        {**REASONS, "calls": [{"name": "fs-read", "id": "c1", "arguments": {"path": "calc.py"}}]},
        {"text": "add subtracts."},
        {"text": "from the key."},
        {"text": "back on the plan."},
        {"text": "the key after a resume."},
        {"text": "the plan after a resume."},
    ]
    with FakeServer(api="responses", script=script) as fake:
        _config(tmp_path / "config.toml", fake.url)
        opened = _open(tmp_path, workspace)
        try:
            agent = opened.agent
            assert agent.user_turn("What does add do?").text == "add subtracts."
            strategies.switch_model(agent, "key")
            assert agent.user_turn("And in one word?").text == "from the key."
            strategies.switch_model(agent, "plan")
            assert agent.user_turn("Once more?").text == "back on the plan."
            sid = agent.session_id
        finally:
            opened.close()
        for model in ("key", "plan"):
            opened = _open(tmp_path, workspace, resume=sid, model_name=model)
            try:
                opened.agent.user_turn("After the resume?")
            finally:
                opened.close()
        bodies = [r.body for r in fake.requests]
        auth = [r.headers.get("authorization") for r in fake.requests]

    assert len(bodies) == 6
    who = ["plan", "plan", "key", "plan", "key", "plan"]
    assert auth == [f"Bearer {'plan-token-value' if w == 'plan' else 'api-key-value'}" for w in who]
    # the plan's reasoning went back to the plan, as it came
    assert [len(_reasoning_items(b)) for b in bodies] == [0, 1, 0, 1, 0, 1]
    for body, w in zip(bodies, who, strict=True):
        if w == "key":
            assert not any("encrypted_content" in str(it) for it in body["input"])
    # the log says whose each block is
    with Store(tmp_path / "home").open(sid) as log:
        blocks = [
            b for e in log.read(1) if e.kind == "llm.resp" for b in e.data["response"].get("blocks", [])
        ]
    assert blocks and all(b["origin"]["credential"] == "PLAN_TOKEN" for b in blocks)
    assert all(b["origin"]["server"] == "openai" and b["origin"]["url"] == fake.url for b in blocks)


def test_models_test_gives_back_only_its_own_reasoning(tmp_path: Path) -> None:
    with FakeServer(api="responses", script=[REASONS, {"text": "OK"}]) as fake:
        creds = Credentials.of(
            [
                Credential(
                    name="PLAN_TOKEN", value="plan-token-value", origins=frozenset({origin_of(fake.url)})
                )
            ]
        )
        settings = ModelEntry(
            name="plan",
            api="responses",
            model="gpt-x",
            server="openai",
            base_url=fake.url,
            credential="PLAN_TOKEN",
            context_size=200_000,
            keep_reasoning=True,
        )
        with HttpBackend(creds) as backend:
            results = probe_model(backend, settings)
        bodies = [r.body for r in fake.requests]
    assert [r.ok for r in results] == [True, True], results
    assert results[0].response is not None
    assert [b.origin for b in results[0].response.blocks] == [settings.origin]
    # the second request gives the reasoning back as a task would, and the fake could read it
    assert [len(_reasoning_items(b)) for b in bodies] == [0, 1]
