"""The input: multi-line editing (Enter sends; Ctrl+J, Alt+Enter or Shift+Enter start a new
line), history (Up on the first line, Down on the last), and completion of slash commands and of
``@path`` mentions (the suggestion shows dimmed; Tab or Right takes it)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import TextArea

MENTIONS = 200  # directory entries looked at for one @path completion


def complete_path(workspace: Path, partial: str) -> str | None:
    """The rest of ``partial`` (a path under ``workspace``) if one entry completes it, or the
    common part several share; None when nothing does. Names only: nothing is read or followed."""
    head, _, stem = partial.rpartition("/")
    folder = workspace / head if head else workspace
    try:
        root = workspace.resolve()
        if not folder.resolve().is_relative_to(root):
            return None
        with os.scandir(folder) as found:
            names = []
            for i, entry in enumerate(found):
                if i >= MENTIONS:
                    break
                if entry.name.startswith(stem) and not entry.name.startswith("."):
                    names.append(entry.name + ("/" if entry.is_dir(follow_symlinks=False) else ""))
    except OSError:
        return None
    if not names:
        return None
    common = os.path.commonprefix(names)
    rest = common[len(stem) :]
    return rest or None


class Composer(TextArea):
    """What the person types. ``Submitted`` carries the text when Enter is pressed."""

    BINDINGS = [
        Binding("ctrl+j,alt+enter,shift+enter", "newline", "New line", show=False),
        Binding("tab", "complete", "Complete", show=False),
    ]

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(
        self, commands: Callable[[], list[str]], workspace: Callable[[], Path], **kw: object
    ) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus", **kw)  # type: ignore[arg-type]
        self.commands = commands
        self.workspace = workspace
        self.sent: list[str] = []
        self._at: int | None = None  # index in history while browsing it
        self._draft = ""

    def update_suggestion(self) -> None:
        text = self.text
        row, col = self.cursor_location
        if "\n" in text or (row, col) != (0, len(text)):
            self.suggestion = ""
            return
        if text.startswith("/") and " " not in text:
            matches = [c for c in self.commands() if c.startswith(text) and c != text]
            self.suggestion = matches[0][len(text) :] if matches else ""
            return
        word = text.rsplit(" ", 1)[-1]
        if word.startswith("@") and len(word) > 1:
            self.suggestion = complete_path(self.workspace(), word[1:]) or ""
            return
        self.suggestion = ""

    def action_complete(self) -> None:
        if self.suggestion:
            self.insert(self.suggestion)
            self.suggestion = ""
            self.update_suggestion()

    def action_newline(self) -> None:
        self.insert("\n")

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            text = self.text
            if text.strip():
                if not self.sent or self.sent[-1] != text:
                    self.sent.append(text)
                self._at = None
                self.clear()
                self.post_message(self.Submitted(text))
            return
        row, _ = self.cursor_location
        if event.key == "up" and row == 0 and self.sent:
            event.stop()
            event.prevent_default()
            if self._at is None:
                self._draft, self._at = self.text, len(self.sent)
            self._at = max(self._at - 1, 0)
            self._show(self.sent[self._at])
            return
        if event.key == "down" and self._at is not None and row == self.document.line_count - 1:
            event.stop()
            event.prevent_default()
            self._at += 1
            if self._at >= len(self.sent):
                self._at = None
                self._show(self._draft)
            else:
                self._show(self.sent[self._at])
            return
        await super()._on_key(event)

    def _show(self, text: str) -> None:
        self.text = text
        self.move_cursor(self.document.end)
