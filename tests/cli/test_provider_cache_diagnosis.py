"""The providers' own cache diagnosis beside nodwyn's (issue 20, item 7; ADR 0312): an entry with
``cache_diagnostics = true`` asks for it on every request after the first, the fake answers from its
own cache state, and ``nodwyn cache`` (text and ``--json``) shows both and flags a disagreement: a
switch between two entries that send the same model id to the same server moves nodwyn's prefix
(each model entry has its own cache, as nodwyn counts) while the provider's cache held."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodwyn.fakes import FakeApi, FakeServer
from nodwyn.log import Store

from .test_run import nodwyn, session_of

ASK = {"anthropic": ("/messages", "diagnostics"), "responses": ("/responses", "prompt_cache_options")}


def configure(env: dict[str, str], api: FakeApi, url: str, *, diagnostics: bool = True) -> None:
    entry = f'api = "{api}"\nmodel = "fake-model"\nbase_url = "{url}"\ncontext_size = 32000\n'
    entry += f"cache_diagnostics = {'true' if diagnostics else 'false'}\n"
    Path(env["NODWYN_CONFIG"]).write_text(
        f'[control]\nmodel = "a"\n\n[models.a]\n{entry}\n[models.b]\n{entry}'
    )


@pytest.mark.parametrize("api", sorted(ASK))
def test_nodwyn_cache_shows_the_providers_reason_and_flags_a_disagreement(
    env: dict[str, str], api: FakeApi
) -> None:
    script = [
        {"text": "Hi."},
        {"text": "Again."},
        {"text": "Third."},
        {"text": "NOTE: greeted."},
        {"text": "Four."},
    ]
    with FakeServer(api=api, script=script) as fake:
        configure(env, api, fake.url)
        chat = nodwyn(env, "chat", stdin="hello\nagain\n/model b\nthird\n/compact\nfourth\n/quit\n")
        assert chat.returncode == 0, chat.stderr
        sid = session_of(chat.stderr)
        path, key = ASK[api]
        bodies = [r.body for r in fake.requests if r.path.endswith(path)]
    assert len(bodies) == 5
    assert key not in bodies[0]  # nothing to compare the first request with
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:
        ids = [e.data["response"]["id"] for e in log.read(1) if e.kind == "llm.resp"]
    asked = [b[key] for b in bodies[1:4]]
    field = "previous_message_id" if api == "anthropic" else "comparison_response_id"
    assert [a[field] for a in asked] == ids[:3]  # each asked against the reply before it
    assert key not in bodies[4]  # the first request of the compacted context: nothing before it

    text = nodwyn(env, "cache", sid)
    assert text.returncode == 0, text.stderr
    lines = [line for line in text.stdout.splitlines() if line[:7].strip().isdigit()]
    assert len(lines) == 5
    assert "provider:" not in lines[0] and "provider:" not in lines[4]
    assert "appended" in lines[1] and "provider: no divergence" in lines[1] and "DISAGREES" not in lines[1]
    switched = lines[2]
    assert switched[7] == "!" and "moved by us: model switch" in switched
    assert "provider: no divergence; DISAGREES with the provider" in switched
    noted = lines[3]  # the compaction's note goes without tools: both say so
    assert noted[7] == " " and "moved by us: tools" in noted and "provider: tools_changed (~" in noted
    assert "the provider disagrees on 1 (marked !)" in text.stdout

    as_json = nodwyn(env, "cache", sid, "--json")
    rows = json.loads(as_json.stdout)["requests"]
    assert "provider_asked" not in rows[0] and "provider_asked" not in rows[4]
    assert [r["disagrees"] for r in rows[1:4]] == [False, True, False]
    assert rows[3]["provider_reason"] == "tools_changed" and rows[3]["provider_missed"] > 0
    assert rows[2]["provider_reason"] is None and "DISAGREES" in rows[2]["detail"]
    with Store(Path(env["NODWYN_HOME"])).open(sid) as log:  # kept on the llm.resp
        reports = [e.data["response"].get("cache_report") for e in log.read(1) if e.kind == "llm.resp"]
    assert reports[0] is None and reports[3] == {
        "against": ids[2],
        "reason": "tools_changed",
        "missed_tokens": rows[3]["provider_missed"],
    }


def test_without_the_setting_nothing_is_asked_and_nothing_shown(env: dict[str, str]) -> None:
    with FakeServer(api="anthropic", script=[{"text": "Hi."}, {"text": "Again."}]) as fake:
        configure(env, "anthropic", fake.url, diagnostics=False)
        chat = nodwyn(env, "chat", stdin="hello\nagain\n/quit\n")
        assert chat.returncode == 0, chat.stderr
        sid = session_of(chat.stderr)
        bodies = [r for r in fake.requests if r.path.endswith("/messages")]
    assert all("diagnostics" not in r.body for r in bodies)
    assert all("cache-diagnosis" not in r.headers.get("anthropic-beta", "") for r in bodies)
    text = nodwyn(env, "cache", sid)
    assert "provider" not in text.stdout
