"""Prompt formats of the in-process local models (pure): a request rendered as the prompt the model
continues, piece by piece, and its reply's calls read back (``calls``).

``format_for(name)`` gives ChatML as Qwen2.5's template writes it (``chatml``) or Gemma's turn
markers (``gemma``); which one a model uses is a property of its weights (``transport.weights``).
"""

from __future__ import annotations

from nodwyn.dialects.local.base import Piece, PromptFormat, shared_prefix, text_of
from nodwyn.dialects.local.blocks import Block, blocks_of
from nodwyn.dialects.local.calls import parse_calls, reply_end
from nodwyn.dialects.local.chatml import CHATML
from nodwyn.dialects.local.gemma import GEMMA
from nodwyn.errors import ConfigError

__all__ = [
    "Block",
    "Piece",
    "PromptFormat",
    "blocks_of",
    "format_for",
    "parse_calls",
    "reply_end",
    "shared_prefix",
    "text_of",
]

FORMATS: dict[str, PromptFormat] = {CHATML.name: CHATML, GEMMA.name: GEMMA}


def format_for(name: str) -> PromptFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise ConfigError(
            f"prompt format {name!r} is unknown; the local formats are {', '.join(sorted(FORMATS))}"
        ) from None
