"""Sessions written with the real log, and the console served from a thread on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodwyn.log import SessionLog, Store
from nodwyn.testing import SessionBuilder, recipe
from nodwyn.values.content import Origin, ThinkingBlock, ToolCall
from nodwyn.values.model import Prices
from nodwyn.values.recipe import WindowLimits
from nodwyn.values.request import ToolSpec, Usage

from .served import CHROMIUM, CHROMIUM_ARGS, Served, serve

LIMITS = WindowLimits(
    high_water=60000, low_water=30000, max_result_tokens=3000, output_reserve=8000, ceiling=90000
)
TOOLS = (ToolSpec(name="fs-read", description="read a file", parameters={"type": "object"}),)


class Writer:
    """A plausible session (user turns, requests, replies with thinking, tool results) recorded on
    a real log through ``nodwyn.testing.SessionBuilder``: every request's digest is real and
    replays. The provider's usage figures are what the test says."""

    def __init__(
        self,
        log: SessionLog,
        model: str = "glm",
        *,
        start: str = "session.start",
        prices: dict[str, Prices] | None = None,
    ) -> None:
        self.session = SessionBuilder(log=log, model=model)
        self.model = model
        self.calls = 0
        rec = recipe(
            19,
            system="You are a careful agent.",
            tools=TOOLS,
            limits=LIMITS,
            context_size=131072,
            prices=tuple(sorted(prices.items())) if prices is not None else None,
        )
        if start == "session.start":
            self.session.start(rec)
        else:
            self.session.resume(rec)

    @property
    def log(self) -> SessionLog:
        log = self.session.log
        assert isinstance(log, SessionLog)
        return log

    @property
    def id(self) -> str:
        return self.log.id

    def user(self, text: str) -> int:
        return self.session.user(text).seq

    def req(self, *, model: str | None = None, ctx: str = "main") -> int:
        name = model or self.model
        return self.session.request(ctx, Origin(model=name, server="fake"), model=name).seq

    def resp(self, req: int, text: str = "", *, ctx: str = "main", call: bool = False, **usage: Any) -> int:
        calls: tuple[ToolCall, ...] = ()
        if call:
            self.calls += 1
            calls = (ToolCall(id=f"c{self.calls}", name="fs-read", arguments='{"path": "src/app.py"}'),)
        block = ThinkingBlock(
            type="thinking", origin=Origin(model=self.model, server="fake"), data="SIGNATURE-XYZ"
        )
        event, _ = self.session.reply(
            self.session.events[req - 1],
            text,
            thinking=f"thinking about {text[:20]}",
            calls=calls,
            blocks=(block,),
            usage=Usage(**usage),
            model=None,
            ctx=ctx,
        )
        return event.seq

    def tool(self, text: str, ctx: str = "main") -> int:
        call = ToolCall(id=f"c{self.calls}", name="fs-read", arguments="{}")
        return self.session.result(call, text, ctx).seq

    def turn(self, prompt: int, cached: int | None, text: str = "done", **kw: Any) -> int:
        seq = self.req(**kw)
        self.resp(seq, text, prompt_tokens=prompt, cached_tokens=cached, output_tokens=40)
        return seq


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def store(root: Path) -> Store:
    return Store(root, fsync=False)


@pytest.fixture
def console(root: Path) -> Iterator[Served]:
    served = serve(root)
    yield served
    served.stop()


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One chromium for the console's tests, ended with them: Playwright's sync API keeps an event
    loop running in this thread while it is open, and later tests (the TUI's) run loops of their own."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    yield pg
    context.close()
