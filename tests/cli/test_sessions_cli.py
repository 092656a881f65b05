"""``nodwyn sessions`` shows what a person looks for (first message, model,
requests, cache share, cost), searches with -q, ids match by their random suffix, ``last`` works
as ``latest``, and the shell completes commands, session ids and model names."""

from __future__ import annotations

from pathlib import Path

import orjson

from nodwyn.fakes import FakeServer
from nodwyn.log import Store

from .test_habits import configure
from .test_run import nodwyn


def complete(env: dict[str, str], *words: str) -> list[str]:
    """What bash completion offers for the last of ``words`` (click's bash protocol)."""
    line = " ".join(["nodwyn", *words])
    done = nodwyn(
        {**env, "_NODWYN_COMPLETE": "bash_complete", "COMP_WORDS": line, "COMP_CWORD": str(len(words))}
    )
    assert done.returncode == 0, done.stderr
    return [row.split(",", 1)[1] for row in done.stdout.splitlines() if row]


def test_sessions_table_search_suffix_last_and_completion(env: dict[str, str]) -> None:
    script = [{"text": "Parsing is fine."}, {"text": "Tabs it is."}, {"text": "Still tabs."}]
    with FakeServer(api="openai-chat", script=script) as fake:
        configure(env, fake.url)
        nodwyn(env, "run", "Why does the parser fail on tabs?")
        nodwyn(env, "run", "-m", "other", "Spaces or tabs?")
        first, second = Store(Path(env["NODWYN_HOME"])).ids()
        by_suffix = nodwyn(env, "resume", second[-8:], "-q", "--json", "And now?")
        listed = nodwyn(env, "sessions")
        found = nodwyn(env, "sessions", "-q", "PARSER")
        in_reply = nodwyn(env, "sessions", "-q", "tabs it")
        as_json = nodwyn(env, "sessions", "--json")
    assert by_suffix.returncode == 0, by_suffix.stderr
    assert orjson.loads(by_suffix.stdout)["session"] == second
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:]}
    assert listed.stdout.splitlines()[0].split()[:6] == ["SESSION", "START", "MODEL", "REQS", "CACHE", "COST"]
    one, two = rows[first].split(), rows[second].split()
    assert one[3:5] == ["fake", "1"] and one[5].endswith("%") and one[6].startswith("$")
    assert rows[first].endswith("Why does the parser fail on tabs?")
    assert two[3:5] == ["other", "2"] and two[6] == "unknown" and rows[second].endswith("Spaces or tabs?")
    assert [line.split()[0] for line in found.stdout.splitlines()[1:]] == [first]
    assert [line.split()[0] for line in in_reply.stdout.splitlines()[1:]] == [second]
    docs = {d["id"]: d for d in map(orjson.loads, as_json.stdout.splitlines())}
    assert docs[first]["first_message"] == "Why does the parser fail on tabs?" and docs[first]["cost_usd"] > 0
    assert docs[second]["model"] == "other" and docs[second]["cost_usd"] is None
    assert docs[second]["requests"] == 2

    shown = nodwyn(env, "log", "last", "--to", "1")
    assert shown.returncode == 0 and "session.start" in shown.stdout
    assert nodwyn(env, "stats", first[-8:]).stdout.splitlines()[0] == f"session {first}"

    assert "sessions" in complete(env, "ses")
    assert set(complete(env, "resume", "")) >= {"latest", "last", first, second}
    assert complete(env, "replay", second[-8:-4]) == [second]
    assert complete(env, "run", "-m", "o") == ["other"]
    assert complete(env, "models", "default", "") == ["fake", "local", "local-tiny", "other"]
