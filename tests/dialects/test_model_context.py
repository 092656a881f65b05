"""``dialects.model_context``: the context window a provider's model list publishes (ADR 0432)."""

from __future__ import annotations

from typing import Any

import pytest

from nodwyn.dialects import model_context


@pytest.mark.parametrize(
    ("reply", "found"),
    [
        ({"data": [{"id": "z-ai/glm", "context_length": 131072}]}, (131072, "context_length")),  # OpenRouter
        ({"data": [{"id": "z-ai/glm", "context_window": 8192}]}, (8192, "context_window")),  # Groq
        (
            {"data": [{"id": "z-ai/glm", "max_context_length": 32768}]},
            (32768, "max_context_length"),
        ),  # Mistral
        ({"data": [{"id": "z-ai/glm", "max_model_len": 16384}]}, (16384, "max_model_len")),  # vLLM
        ([{"id": "z-ai/glm", "context_length": 65536}], (65536, "context_length")),  # Together: an array
        ({"data": [{"id": "other", "context_length": 1}, {"id": "z-ai/glm"}]}, None),  # none for this model
        ({"data": [{"id": "z-ai/glm", "context_length": "131072"}]}, None),  # not a count
        ({"data": [{"id": "z-ai/glm", "context_length": True}]}, None),
        ({"models": [{"name": "z-ai/glm"}]}, None),  # Ollama's /api/tags publishes none
    ],
)
def test_the_published_context_is_read_from_the_models_own_entry(reply: Any, found: Any) -> None:
    assert model_context(reply, "z-ai/glm") == found
