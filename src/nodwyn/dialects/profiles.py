"""What each server family of the chat-completions API wants and gives, as one value per family.

The family comes from the model entry (``ModelEntry.family``), never from a model's name. Every
place that treats families differently reads the family's ``ChatProfile`` here: the request's
fields (``openai_chat``), the session headers (``session_key``, for every API: a family without
headers of its own gets the default pair), the usage fields a reply is read from, and the hints an
error names (``errors``). A new family is a new row.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodwyn.values.model import Family, ModelEntry

# Servers without a documented session header get the key as both: a server that knows neither
# ignores them, and the gateways in front of OpenAI-compatible servers route by one or the other.
DEFAULT_SESSION_HEADERS = ("X-Session-Id", "X-Session-Affinity")


@dataclass(frozen=True, slots=True, kw_only=True)
class Hint:
    """An error a server answers when the entry needed this family: a fragment of its message,
    and what the server needed, in words."""

    says: str
    needs: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatProfile:
    # the field a message's thinking goes back as
    reasoning_out: str = "reasoning_content"
    # thinking goes back on every tool-call turn, even empty (the server refuses the turn otherwise)
    reasoning_on_calls: bool = False
    # a reply's reasoning_details are kept (one block, the array's JSON) and go back as they came
    keeps_details: bool = True
    # the body field of the request's output limit
    max_output_field: str = "max_completion_tokens"
    # streamed requests ask for usage (stream_options.include_usage); false where the server
    # always sends it and the option is deprecated
    stream_usage_option: bool = True
    # the headers that carry the session key
    session_headers: tuple[str, ...] = DEFAULT_SESSION_HEADERS
    # where the family's replies report the prompt tokens read from the cache ("a.b": field b of
    # object a in ``usage``, or of the reply's ``timings`` for llama.cpp)
    cache_reads: str = "usage.prompt_tokens_details.cached_tokens"
    # errors that say the entry should have this family
    hints: tuple[Hint, ...] = ()


PROFILES: dict[Family, ChatProfile] = {
    "compatible": ChatProfile(),
    "cerebras": ChatProfile(reasoning_out="reasoning", keeps_details=False),
    "vllm": ChatProfile(reasoning_out="reasoning"),
    "deepseek": ChatProfile(
        reasoning_on_calls=True,
        max_output_field="max_tokens",
        cache_reads="usage.prompt_cache_hit_tokens",
        hints=(
            Hint(
                says="reasoning_content in the thinking mode must be passed back",
                needs="DeepSeek needs reasoning_content back on tool-call turns",
            ),
        ),
    ),
    "llamacpp": ChatProfile(max_output_field="max_tokens", cache_reads="timings.cache_n"),
    "openrouter": ChatProfile(
        reasoning_out="reasoning", stream_usage_option=False, session_headers=("X-Session-Id",)
    ),
    "fireworks": ChatProfile(max_output_field="max_tokens", session_headers=("x-session-affinity",)),
    "baseten": ChatProfile(max_output_field="max_tokens", session_headers=("x-baseten-session-id",)),
}

# A reply is read for cache reads in every family's place, in this order (a reply says its own
# shape; a server behind the wrong family setting still reports what it read).
CACHE_READS: tuple[str, ...] = tuple(dict.fromkeys(p.cache_reads for p in PROFILES.values()))
# Families whose thinking goes back as ``reasoning`` (named by the hint for a server that refuses
# ``reasoning_content``).
SEND_REASONING: tuple[str, ...] = tuple(f for f, p in PROFILES.items() if p.reasoning_out == "reasoning")


def profile_for(settings: ModelEntry) -> ChatProfile:
    return PROFILES[settings.family]
