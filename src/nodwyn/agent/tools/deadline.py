"""A tool's time limit, checked as it works (``[tools] tool_timeout``)."""

from __future__ import annotations

import time

from nodwyn.errors import ToolError


class Deadline:
    """A tool's time limit, checked as it works: a tool that would run on stops with one line."""

    def __init__(self, tool: str, seconds: float) -> None:
        self.tool = tool
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def check(self) -> None:
        if time.monotonic() > self.end:
            raise ToolError(
                f"{self.tool}: stopped after {self.seconds:g} s (the tool deadline); narrow the path "
                "or pattern, or raise [tools] tool_timeout in config.toml"
            )
