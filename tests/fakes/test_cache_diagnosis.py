"""The fakes' own cache diagnosis (ADR 0312), driven by the official SDKs and read back as their
types: Anthropic's ``diagnostics`` on the message, OpenAI Responses' ``prompt_cache_diagnostics``,
each from the fake's cache state (a request that appends is no divergence; a changed part is named;
an unknown earlier id is not found)."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import Message
from openai.types.responses import Response as OpenAIResponse

from nodwyn.fakes import FakeServer

LONG = "Keep every answer short and precise. " * 120  # past the 1,024-token minimum


def _anthropic(client: anthropic.Anthropic, system: str, turns: list[Any], previous: str | None) -> Message:
    extra: dict[str, Any] = {} if previous is None else {"diagnostics": {"previous_message_id": previous}}
    return client.messages.create(
        model="fake-model",
        max_tokens=64,
        system=system,
        messages=turns,
        extra_body={"cache_control": {"type": "ephemeral"}, **extra},
    )


def test_anthropic_fake_diagnoses_from_its_cache_as_the_sdk_reads_it() -> None:
    with FakeServer(
        api="anthropic", script=[{"text": "One."}, {"text": "Two."}, {"text": "Three."}, {"text": "4"}]
    ) as fake:
        client = anthropic.Anthropic(base_url=fake.url, api_key="k", max_retries=0)
        hi = [{"role": "user", "content": "hi"}]
        first = _anthropic(client, LONG, hi, None)
        more = [*hi, {"role": "assistant", "content": "One."}, {"role": "user", "content": "more"}]
        second = _anthropic(client, LONG, more, first.id)
        third = _anthropic(client, "Be kind. " + LONG, more, second.id)
        lost = _anthropic(client, LONG, more, "msg_never_given")
    assert first.diagnostics is None and second.diagnostics is None  # appended: nothing diverged
    assert third.diagnostics is not None and third.diagnostics.cache_miss_reason is not None
    reason = third.diagnostics.cache_miss_reason
    assert reason.type == "system_changed" and reason.cache_missed_input_tokens > 1000
    assert lost.diagnostics is not None and lost.diagnostics.cache_miss_reason is not None
    assert lost.diagnostics.cache_miss_reason.type == "previous_message_not_found"
    Message.model_validate(third.model_dump())


@pytest.mark.parametrize("stream", [True, False])
def test_responses_fake_diagnoses_from_its_cache_as_the_sdk_reads_it(stream: bool) -> None:
    script = [{"text": "One."}, {"text": "Two."}, {"text": "Three."}, {"text": "Four."}]
    with FakeServer(api="responses", script=script) as fake:
        client = openai.OpenAI(base_url=fake.url + "/v1", api_key="k", max_retries=0)

        def ask(instructions: str, turns: list[Any], against: str | None) -> OpenAIResponse:
            extra = {} if against is None else {"prompt_cache_options": {"comparison_response_id": against}}
            kw: dict[str, Any] = {
                "model": "fake-model",
                "instructions": instructions,
                "input": turns,
                "store": False,
            }
            if stream:
                with client.responses.stream(**kw, extra_body=extra) as s:
                    return s.get_final_response()
            created: OpenAIResponse = client.responses.create(**kw, extra_body=extra)
            return created

        hi = [{"role": "user", "content": "hi"}]
        first = ask(LONG, hi, None)
        more = [*hi, {"role": "assistant", "content": "One."}, {"role": "user", "content": "more"}]
        second = ask(LONG, more, first.id)
        third = ask("Other instructions. " + LONG, more, second.id)
        lost = ask(LONG, more, "resp_never_given")
    assert first.prompt_cache_diagnostics is None
    assert second.prompt_cache_diagnostics is not None and second.prompt_cache_diagnostics.type == "cache_hit"
    miss = third.prompt_cache_diagnostics
    assert miss is not None and miss.type == "cache_miss"
    assert miss.reason == "input_changed" and miss.cache_missed_tokens > 1000
    assert (
        third.prompt_cache_options is not None
        and third.prompt_cache_options.comparison_response_id == second.id
    )
    assert lost.prompt_cache_diagnostics is not None
    assert lost.prompt_cache_diagnostics.type == "comparison_response_not_found"
    OpenAIResponse.model_validate(third.model_dump())
