"""The loaders on the real runs of the workload corpus (NODWYN_WORKLOADS; skipped without it): each
format becomes the conversation its model saw, checked against the file's own fields (a small subset
of runs; the benchmark loads all)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nodwyn.errors import ImportFormatError
from nodwyn.imports import Found, Run, find, load, load_all
from nodwyn.imports.mini_v1 import ACTION
from nodwyn.values.content import AssistantMessage, TextPart, ToolMessage, UserMessage

DEEPSEEK = "minisweagent-deepseek-v2"
GEMINI = "minisweagent-gemini3pro"
SWEAGENT = "sweagent-lm32b-lastn5"
OPENHANDS = "openhands-v1-claude-sonnet4"


def smallest(folder: Path, pattern: str) -> Path:
    return min(folder.glob(pattern), key=lambda p: p.stat().st_size)


def one(path: Path) -> Run:
    [found] = find(path)
    return load(found)


def text(m: UserMessage) -> str:
    return "".join(p.text for p in m.parts if isinstance(p, TextPart))


def assert_pairs(run: Run) -> None:
    """No result without a call of the reply before it; no call unanswered but the last reply's."""
    open_ids: set[str] = set()
    for m in run.messages:
        if isinstance(m, AssistantMessage):
            assert not open_ids, f"{run.name}: unanswered calls {open_ids}"
            open_ids = {c.id for c in m.calls}
        elif isinstance(m, ToolMessage):
            assert m.call_id in open_ids, f"{run.name}: orphan result {m.call_id}"
            open_ids.remove(m.call_id)
    assert isinstance(run.messages[-1], AssistantMessage), "a run ends with its last reply"


def test_find_lists_every_run_of_every_source(workloads: Path) -> None:
    found = find(workloads)
    kinds = {f.name: f.kind for f in found}
    assert sum(k == "mini-swe-agent" for k in kinds.values()) == len(
        list((workloads / GEMINI).glob("*.traj.json"))
    ) + len(list((workloads / DEEPSEEK).glob("*/*.traj.json")))
    assert sum(k == "swe-agent" for k in kinds.values()) == len(list((workloads / SWEAGENT).glob("*.traj")))
    convs = [d for d in (workloads / OPENHANDS).iterdir() if (d / "events").is_dir()]
    assert sum(k == "openhands" for k in kinds.values()) == len(convs) > 0
    assert not any(name.endswith((".tsv", ".md", ".py", ".txt")) for name in kinds)


def test_mini_v2_is_the_chat_list_the_agent_sent(workloads: Path) -> None:
    path = smallest(workloads / DEEPSEEK, "*/*.traj.json")
    raw = json.loads(path.read_text())["messages"]
    run = one(path)
    assert run.format == "mini-swe-agent-v2"
    assert run.system == raw[0]["content"]
    assert [t.name for t in run.tools] == ["bash"]
    sent = [m for m in raw if m["role"] in ("user", "assistant", "tool")]
    last = max(i for i, m in enumerate(sent) if m["role"] == "assistant")
    assert len(run.messages) == last + 1  # nothing after the last reply
    for mine, theirs in zip(run.messages, sent, strict=False):
        assert mine.role == theirs["role"]
        if isinstance(mine, AssistantMessage):
            assert mine.text == theirs["content"]
            assert [(c.id, c.name, c.arguments) for c in mine.calls] == [
                (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in theirs["tool_calls"]
            ]
        elif isinstance(mine, ToolMessage):
            assert (mine.call_id, mine.text) == (theirs["tool_call_id"], theirs["content"])
            assert mine.error == ("<returncode>0</returncode>" not in theirs["content"][:40])
        else:
            assert text(mine) == theirs["content"]
    assert_pairs(run)


def test_mini_v2_reasoning_content_is_the_replys_thinking(workloads: Path) -> None:
    path = smallest(workloads / DEEPSEEK / "deepseek_reasoner_dev", "*.traj.json")
    raw = [m for m in json.loads(path.read_text())["messages"] if m["role"] == "assistant"]
    run = one(path)
    replies = [m for m in run.messages if isinstance(m, AssistantMessage)]
    assert len(replies) == len(raw)
    assert [r.thinking for r in replies] == [m.get("reasoning_content") or "" for m in raw]
    assert any(r.thinking for r in replies)


def test_mini_v2_a_harness_message_mid_run_stays_a_user_message(workloads: Path) -> None:
    path = workloads / DEEPSEEK / "deepseek_chat_test_1-100" / "django__django-13964.traj.json"
    if not path.exists():
        pytest.skip("run not in this copy of the workloads")
    run = one(path)
    users = [text(m) for m in run.messages[1:] if isinstance(m, UserMessage)]
    assert any(u.startswith("Tool call error") for u in users)
    assert_pairs(run)


def test_mini_v1_text_actions_become_calls_and_outputs_their_results(workloads: Path) -> None:
    path = smallest(workloads / GEMINI, "*.traj.json")
    raw = json.loads(path.read_text())["messages"]
    run = one(path)
    assert run.format == "mini-swe-agent-v1"
    assert run.system == raw[0]["content"] and run.tools == ()
    replies = [i for i, m in enumerate(raw) if m["role"] == "assistant"]
    assert len(run.replies) == len(replies)
    mine = iter(run.messages)
    for i, m in enumerate(raw[1 : replies[-1] + 1], start=1):
        got = next(mine)
        if (
            m["role"] == "user"
            and raw[i - 1]["role"] == "assistant"
            and len(ACTION.findall(raw[i - 1]["content"])) == 1
        ):
            assert isinstance(got, ToolMessage) and got.text == m["content"]
        elif m["role"] == "user":
            assert isinstance(got, UserMessage) and text(got) == m["content"]
        else:
            assert isinstance(got, AssistantMessage)
            blocks = ACTION.findall(m["content"])
            if len(blocks) == 1:
                assert [json.loads(c.arguments) for c in got.calls] == [{"command": blocks[0]}]
                rest = ACTION.sub("", m["content"], count=1)
                assert got.text.split() == rest.split()  # the reply's words, the block taken out
            else:
                assert got.calls == () and got.text == m["content"]
    assert_pairs(run)


def test_mini_v1_format_errors_stay_user_messages(workloads: Path) -> None:
    runs = [one(p) for p in sorted((workloads / GEMINI).glob("*.traj.json"))[:12]]
    after_textual = [
        run.messages[i + 1]
        for run in runs
        for i, m in enumerate(run.messages[:-1])
        if isinstance(m, AssistantMessage) and not m.calls
    ]
    assert after_textual, "the first runs have replies with no single action"
    assert all(isinstance(m, UserMessage) for m in after_textual)


def test_swe_agent_history_matches_the_recorded_requests(workloads: Path) -> None:
    path = sorted((workloads / SWEAGENT).glob("*.traj"))[0]
    doc = json.loads(path.read_text())
    run = one(path)
    assert run.format == "swe-agent" and run.system == doc["history"][0]["content"]
    replies = [m for m in run.messages if isinstance(m, AssistantMessage)]
    actions = [m for m in doc["history"] if m["role"] == "assistant"]
    assert len(replies) == len(actions) == len(doc["trajectory"])
    for mine, theirs in zip(replies, actions, strict=True):
        assert mine.text == theirs["thought"].strip()
        fn = re.findall(r"<function=([\w.-]+)>", theirs["content"])
        assert [c.name for c in mine.calls] == fn[:1]
    # The recorded request of step k+1 ends with step k's observation, unmasked: our result text.
    for k, step in enumerate(doc["trajectory"][:-1]):
        latest = step["messages"][-1]["content"]
        idx = run.replies[k + 1] - 1
        got = run.messages[idx]
        assert isinstance(got, ToolMessage | UserMessage)
        assert (got.text if isinstance(got, ToolMessage) else text(got)) == latest
    assert_pairs(run)


def test_openhands_events_become_replies_and_results(workloads: Path) -> None:
    folder = min(
        (d for d in (workloads / OPENHANDS).iterdir() if (d / "events").is_dir()),
        key=lambda d: len(list((d / "events").iterdir())),
    )
    events = [json.loads(f.read_text()) for f in sorted((folder / "events").glob("event-*.json"))]
    run = one(folder)
    assert run.format == "openhands-v1"
    [sp] = [e for e in events if e["kind"] == "SystemPromptEvent"]
    assert run.system == sp["system_prompt"]["text"]
    assert [t.name for t in run.tools] == [t["function"]["name"] for t in sp["tools"]]
    acts = [e for e in events if e["kind"] == "ActionEvent"]
    calls = [c for m in run.messages if isinstance(m, AssistantMessage) for c in m.calls]
    assert [c.id for c in calls] == [a["tool_call_id"] for a in acts]
    assert len(run.replies) == len({a["llm_response_id"] for a in acts})
    results = {m.call_id: m for m in run.messages if isinstance(m, ToolMessage)}
    for e in events:
        if e["kind"] == "ObservationEvent" and e["tool_call_id"] in results:
            out = e["observation"].get("output") or e["observation"].get("content") or ""
            assert out in results[e["tool_call_id"]].text
    assert_pairs(run)


def test_every_shared_run_loads_with_valid_pairs(workloads: Path) -> None:
    runs = load_all(workloads)
    assert {r.format for r in runs} == {"mini-swe-agent-v1", "mini-swe-agent-v2", "swe-agent", "openhands-v1"}
    for run in runs:
        assert_pairs(run)
        assert len(run.replies) >= 20


# -- bad input: a clear error naming the file ---------------------------------------------------


def test_a_truncated_file_is_refused_by_name(tmp_path: Path, workloads: Path) -> None:
    src = smallest(workloads / GEMINI, "*.traj.json").read_bytes()
    bad = tmp_path / "cut.traj.json"
    bad.write_bytes(src[: len(src) // 2])
    with pytest.raises(ImportFormatError, match="cut.traj.json: not JSON"):
        load(Found(path=bad, name=bad.name, kind="mini-swe-agent"))


def test_an_unknown_trajectory_format_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.traj.json"
    bad.write_text(json.dumps({"trajectory_format": "mini-swe-agent-9", "messages": []}))
    with pytest.raises(ImportFormatError, match="'mini-swe-agent-9' is not one we read"):
        load_all(tmp_path)


def test_a_result_without_its_call_is_refused(tmp_path: Path) -> None:
    msgs = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "a", "tool_calls": []},
        {"role": "tool", "content": "out", "tool_call_id": "nope"},
        {"role": "assistant", "content": "b", "tool_calls": []},
    ]
    bad = tmp_path / "x.traj.json"
    bad.write_text(json.dumps({"trajectory_format": "mini-swe-agent-1.1", "messages": msgs}))
    with pytest.raises(ImportFormatError, match="x.traj.json: .*result for call 'nope'"):
        load_all(tmp_path)


def test_an_unknown_openhands_event_is_refused(tmp_path: Path) -> None:
    events = tmp_path / "conv" / "events"
    events.mkdir(parents=True)
    (events / "event-00000-a.json").write_text(json.dumps({"kind": "TeleportEvent"}))
    with pytest.raises(ImportFormatError, match="unknown event kind 'TeleportEvent'"):
        load_all(tmp_path)


def test_a_folder_without_runs_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("nothing here")
    with pytest.raises(ImportFormatError, match="no runs found"):
        find(tmp_path)
