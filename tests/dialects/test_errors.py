"""Every documented provider error shape becomes one clear error line."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import nodwyn.errors as errors
from nodwyn.dialects import dialect_for

from .cases import entry

OPENAI = {"api": "openai-chat", "model": "gpt-5.6"}
RESPONSES = {"api": "responses", "model": "gpt-6.1-sol"}
ANTHROPIC = {"api": "anthropic", "model": "claude-sonnet-5-5"}
OPENROUTER = {
    "api": "openai-chat",
    "family": "openrouter",
    "model": "anthropic/claude-sonnet-5.5",
    "server": "openrouter",
}
DEEPSEEK = {"api": "openai-chat", "family": "deepseek", "model": "deepseek-v4"}
CEREBRAS = {"api": "openai-chat", "family": "cerebras", "model": "qwen-3.8-27b"}
OLLAMA = {"api": "ollama", "model": "qwen3:8b"}
LLAMACPP = {"api": "openai-chat", "family": "llamacpp", "model": "gemma-4"}
VLLM = {"api": "openai-chat", "family": "vllm", "model": "Qwen/Qwen3.5-32B"}


def j(value: Any) -> bytes:
    return orjson.dumps(value)


# (id, model entry, status, body, headers, class, field, message)
CASES: list[tuple[str, dict[str, Any], int, bytes, dict[str, str], str, str | None, str]] = [
    (
        "openai-unsupported-max_tokens",
        OPENAI,
        400,
        j(
            {
                "error": {
                    "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                    "Use 'max_completion_tokens' instead.",
                    "type": "invalid_request_error",
                    "param": "max_tokens",
                    "code": "unsupported_parameter",
                }
            }
        ),
        {},
        "ProviderError",
        "max_tokens",
        "compatible HTTP 400 (invalid_request_error): Unsupported parameter: 'max_tokens' is not supported "
        "with this model. Use 'max_completion_tokens' instead [field: max_tokens]; this model wants "
        "max_completion_tokens: set the model entry's family accordingly",
    ),
    (
        "openai-unrecognized-argument",
        OPENAI,
        400,
        j(
            {
                "error": {
                    "message": "Unrecognized request argument supplied: reasoning_content",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            }
        ),
        {},
        "ProviderError",
        "reasoning_content",
        "compatible HTTP 400 (invalid_request_error): Unrecognized request argument supplied: "
        "reasoning_content [field: reasoning_content]; this server refuses reasoning_content: set the "
        "model's family (cerebras, vllm, openrouter send reasoning)",
    ),
    (
        "openai-unknown-message-parameter",
        OPENAI,
        400,
        j(
            {
                "error": {
                    "message": "Unknown parameter: 'messages[1].reasoning_signature'.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "unknown_parameter",
                }
            }
        ),
        {},
        "ProviderError",
        "messages[1].reasoning_signature",
        "compatible HTTP 400 (invalid_request_error): Unknown parameter: 'messages[1].reasoning_signature'"
        " [field: messages[1].reasoning_signature]",
    ),
    (
        "responses-item-not-persisted",
        RESPONSES,
        404,
        j(
            {
                "error": {
                    "message": "Item with id 'rs_68a1' not found. Items are not persisted when "
                    "`store` is set to false. Try again with `store` set to true, "
                    "or remove this item from your input.",
                    "type": "invalid_request_error",
                    "param": "input",
                    "code": None,
                }
            }
        ),
        {},
        "ProviderError",
        "input",
        "responses HTTP 404 (invalid_request_error): Item with id 'rs_68a1' not found. Items are not "
        "persisted when `store` is set to false. Try again with `store` set to true, or remove this item "
        "from your input [field: input]",
    ),
    (
        "responses-function-call-without-reasoning",
        RESPONSES,
        400,
        j(
            {
                "error": {
                    "message": "Item 'fc_12' of type 'function_call' was provided without its required "
                    "'reasoning' item: 'rs_11'.",
                    "type": "invalid_request_error",
                    "param": "input",
                    "code": None,
                }
            }
        ),
        {},
        "ProviderError",
        "input",
        "responses HTTP 400 (invalid_request_error): Item 'fc_12' of type 'function_call' was provided "
        "without its required 'reasoning' item: 'rs_11' [field: input]",
    ),
    (
        "responses-reasoning-without-following-item",
        RESPONSES,
        400,
        j(
            {
                "error": {
                    "message": "Item 'rs_0a1' of type 'reasoning' was provided without its required "
                    "following item.",
                    "type": "invalid_request_error",
                    "param": "input",
                    "code": None,
                }
            }
        ),
        {},
        "ProviderError",
        "input",
        "responses HTTP 400 (invalid_request_error): Item 'rs_0a1' of type 'reasoning' was provided "
        "without its required following item [field: input]",
    ),
    (
        "anthropic-expected-thinking-first",
        ANTHROPIC,
        400,
        j(
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, "
                    "but found `text`. When `thinking` is enabled, a final `assistant` message must start "
                    "with a thinking block. To avoid this requirement, disable `thinking`.",
                },
                "request_id": "req_012",
            }
        ),
        {},
        "ProviderError",
        "messages.1.content.0.type",
        "anthropic HTTP 400 (invalid_request_error): messages.1.content.0.type: Expected `thinking` or "
        "`redacted_thinking`, but found `text`. When `thinking` is enabled, a final `assistant` message "
        "must start with a thinking block. To avoid this requirement, disable `thinking` "
        "[field: messages.1.content.0.type]",
    ),
    (
        "anthropic-bound-thinking-block",
        ANTHROPIC,
        400,
        j(
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "messages.3.content.0: Invalid `signature` in `thinking` block. "
                    "The block is bound to a different conversation. Remove the block, or set "
                    '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".',
                },
                "request_id": "req_011",
            }
        ),
        {},
        "ProviderError",
        "messages.3.content.0",
        "anthropic HTTP 400 (invalid_request_error): messages.3.content.0: Invalid `signature` in "
        "`thinking` block. The block is bound to a different conversation. Remove the block, or set "
        '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block" [field: messages.3.content.0];'
        " a reasoning block was refused; it went back as it came, so report the session",
    ),
    (
        "anthropic-five-breakpoints",
        ANTHROPIC,
        400,
        j(
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "A maximum of 4 blocks with cache_control may be provided. Found 5.",
                },
            }
        ),
        {},
        "ProviderError",
        None,
        "anthropic HTTP 400 (invalid_request_error): A maximum of 4 blocks with cache_control may be "
        "provided. Found 5",
    ),
    (
        "anthropic-overloaded",
        ANTHROPIC,
        529,
        j(
            {
                "type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"},
                "request_id": "r",
            }
        ),
        {"retry-after": "12"},
        "ProviderUnavailable",
        None,
        "anthropic HTTP 529 (overloaded_error): Overloaded; "
        "the server is unavailable or overloaded: try again later",
    ),
    (
        "anthropic-rate-limit",
        ANTHROPIC,
        429,
        j(
            {
                "type": "error",
                "error": {
                    "type": "rate_limit_error",
                    "message": "Number of request tokens has exceeded your per-minute rate limit",
                },
            }
        ),
        {"Retry-After": "30"},
        "RateLimitError",
        None,
        "anthropic HTTP 429 (rate_limit_error): Number of request tokens has exceeded your per-minute rate "
        "limit; rate limited: wait, or lower the request rate",
    ),
    (
        "anthropic-auth",
        ANTHROPIC,
        401,
        j({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
        {},
        "AuthError",
        None,
        "anthropic HTTP 401 (authentication_error): invalid x-api-key; check the model entry's credential",
    ),
    (
        "openrouter-upstream-raw",
        OPENROUTER,
        400,
        j(
            {
                "error": {
                    "message": "Provider returned error",
                    "code": 400,
                    "metadata": {
                        "raw": '{"message":"messages.7.content.2: Invalid signature in thinking block"}',
                        "provider_name": "Amazon Bedrock",
                        "is_byok": False,
                    },
                }
            }
        ),
        {},
        "ProviderError",
        "messages.7.content.2",
        "openrouter HTTP 400: Provider returned error: Amazon Bedrock: messages.7.content.2: Invalid "
        "signature in thinking block [field: messages.7.content.2]; a reasoning block was refused; it went "
        "back as it came, so report the session",
    ),
    (
        "openrouter-context-length",
        OPENROUTER,
        400,
        j(
            {
                "error": {
                    "code": 400,
                    "message": "This endpoint's maximum context length is 200000 tokens.",
                    "metadata": {"error_type": "context_length_exceeded", "provider_code": "400"},
                }
            }
        ),
        {},
        "ContextLengthError",
        None,
        "openrouter HTTP 400 (context_length_exceeded): This endpoint's maximum context length is 200000 "
        "tokens; the prompt is over the model's context: check context_size and the window's high water",
    ),
    (
        "openrouter-rate-limit",
        OPENROUTER,
        429,
        j(
            {
                "error": {
                    "code": 429,
                    "message": "Rate limit exceeded",
                    "metadata": {"error_type": "rate_limit_exceeded"},
                }
            }
        ),
        {"retry-after": "5"},
        "RateLimitError",
        None,
        "openrouter HTTP 429 (rate_limit_exceeded): Rate limit exceeded; rate limited: wait, or lower the "
        "request rate",
    ),
    (
        "deepseek-reasoning-required",
        DEEPSEEK,
        400,
        j(
            {
                "error": {
                    "message": "The reasoning_content in the thinking mode must be passed back to the API.",
                    "type": "invalid_request_error",
                    "code": "invalid_request_error",
                }
            }
        ),
        {},
        "ProviderError",
        "reasoning_content",
        "deepseek HTTP 400 (invalid_request_error): The reasoning_content in the thinking mode must be "
        "passed back to the API [field: reasoning_content]; DeepSeek needs reasoning_content back on "
        'tool-call turns: set family = "deepseek"',
    ),
    (
        "cerebras-unwrapped-reasoning_content",
        CEREBRAS,
        400,
        j(
            {
                "message": "messages.2.assistant.reasoning_content: property "
                "'messages.2.assistant.reasoning_content' is unsupported",
                "type": "invalid_request_error",
                "param": "validation_error",
                "code": "wrong_api_format",
            }
        ),
        {},
        "ProviderError",
        "messages.2.assistant.reasoning_content",
        "cerebras HTTP 400 (invalid_request_error): messages.2.assistant.reasoning_content: property "
        "'messages.2.assistant.reasoning_content' is unsupported [field: "
        "messages.2.assistant.reasoning_content]; this server refuses reasoning_content: set the model's "
        "family (cerebras, vllm, openrouter send reasoning)",
    ),
    (
        "cerebras-prompt_cache_key-422",
        CEREBRAS,
        422,
        j(
            {
                "message": "body.prompt_cache_key: property 'body.prompt_cache_key' is unsupported",
                "type": "invalid_request_error",
                "param": "validation_error",
                "code": "wrong_api_format",
            }
        ),
        {},
        "ProviderError",
        "prompt_cache_key",
        "cerebras HTTP 422 (invalid_request_error): body.prompt_cache_key: property "
        "'body.prompt_cache_key' is unsupported [field: prompt_cache_key]; this server refuses "
        'prompt_cache_key: set cache_key = "header" or "off" in the model entry',
    ),
    (
        "cerebras-value-error",
        CEREBRAS,
        400,
        j(
            {
                "message": "parallel_tool_calls=False is not supported by this model.",
                "type": "invalid_request_error",
                "param": "parallel_tool_calls",
                "code": "wrong_api_format",
            }
        ),
        {},
        "ProviderError",
        "parallel_tool_calls",
        "cerebras HTTP 400 (invalid_request_error): parallel_tool_calls=False is not supported by this "
        "model [field: parallel_tool_calls]",
    ),
    (
        "sglang-object-error",
        VLLM,
        400,
        j(
            {
                "object": "error",
                "message": "This model's maximum context length is 32768 tokens.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        ),
        {},
        "ContextLengthError",
        None,
        "vllm HTTP 400 (BadRequestError): This model's maximum context length is 32768 tokens; the prompt "
        "is over the model's context: check context_size and the window's high water",
    ),
    (
        "ollama-string-error",
        OLLAMA,
        404,
        j({"error": 'model "qwen3:8b" not found, try pulling it first'}),
        {},
        "ProviderError",
        None,
        'ollama HTTP 404: model "qwen3:8b" not found, try pulling it first',
    ),
    (
        "ollama-busy",
        OLLAMA,
        503,
        j({"error": "server busy, please try again.  maximum pending requests exceeded"}),
        {"Retry-After": "2"},
        "ProviderUnavailable",
        None,
        "ollama HTTP 503: server busy, please try again. maximum pending requests exceeded; "
        "the server is unavailable or overloaded: try again later",
    ),
    (
        "llamacpp-expected-content",
        LLAMACPP,
        400,
        j(
            {
                "error": {
                    "code": 400,
                    "message": "Expected 'content' or 'tool_calls'",
                    "type": "invalid_request_error",
                }
            }
        ),
        {},
        "ProviderError",
        None,
        "llamacpp HTTP 400 (invalid_request_error): Expected 'content' or 'tool_calls'",
    ),
    (
        "proxy-html-502",
        OPENAI,
        502,
        b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>nginx</body></html>",
        {},
        "ProviderUnavailable",
        None,
        "compatible HTTP 502: <html>; the server is unavailable or overloaded: try again later",
    ),
    (
        "empty-503-http-date",
        OPENAI,
        503,
        b"",
        {"Retry-After": "Wed, 21 Oct 2026 07:28:30 GMT", "Date": "Wed, 21 Oct 2026 07:28:00 GMT"},
        "ProviderUnavailable",
        None,
        "compatible HTTP 503: (empty body); the server is unavailable or overloaded: try again later",
    ),
]
RETRY = {
    "anthropic-overloaded": 12.0,
    "anthropic-rate-limit": 30.0,
    "openrouter-rate-limit": 5.0,
    "empty-503-http-date": 30.0,
    "ollama-busy": 2.0,
}


@pytest.mark.parametrize(
    ("fields", "status", "body", "headers", "cls", "field", "message"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_error_shape_becomes_one_line(
    request: pytest.FixtureRequest,
    fields: dict[str, Any],
    status: int,
    body: bytes,
    headers: dict[str, str],
    cls: str,
    field: str | None,
    message: str,
) -> None:
    err = dialect_for(entry(**fields)).parse_error(status, body, headers)
    assert type(err) is getattr(errors, cls)
    assert str(err) == message
    assert "\n" not in str(err) and "\r" not in str(err)
    assert err.status == status
    assert err.field == field
    assert err.retryable == (cls in ("RateLimitError", "ProviderUnavailable"))
    case_id = request.node.callspec.id
    assert err.retry_after == RETRY.get(case_id)


def test_retry_after_ms_wins_and_long_messages_are_cut() -> None:
    d = dialect_for(entry(**OPENAI))
    err = d.parse_error(429, j({"error": {"message": "slow down " * 100}}), {"retry-after-ms": "1500"})
    assert err.retry_after == 1.5
    assert len(str(err)) < 520
    assert "\n" not in str(err)
