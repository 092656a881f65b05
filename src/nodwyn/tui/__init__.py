"""The terminal UI (``nodwyn tui``; ``nodwyn`` alone on a terminal): a Textual face over the same
library as the CLI. See README.md beside this file and docs/tui.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodwyn import lazy

if TYPE_CHECKING:
    from nodwyn.tui.command import tui

__all__ = ["tui"]

__getattr__ = lazy(__name__, {"command": "tui"})
