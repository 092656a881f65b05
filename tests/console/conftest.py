"""Sessions written with the real log, and the console served from a thread on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodwyn.log import SessionLog, Store
from nodwyn.values.codec import origin_to_json, recipe_to_json, response_to_json
from nodwyn.values.content import Origin, ThinkingBlock, ToolCall
from nodwyn.values.model import Prices
from nodwyn.values.recipe import Recipe, WindowLimits
from nodwyn.values.request import Response, ToolSpec, Usage

from .served import CHROMIUM, CHROMIUM_ARGS, Served, serve


def recipe(prices: dict[str, Prices] | None = None) -> dict[str, Any]:
    limits = WindowLimits(
        high_water=60000, low_water=30000, max_result_tokens=3000, output_reserve=8000, ceiling=90000
    )
    tools = (ToolSpec(name="fs-read", description="read a file", parameters={"type": "object"}),)
    return recipe_to_json(
        Recipe(
            version=19,
            system="You are a careful agent.",
            tools=tools,
            limits=limits,
            context_size=131072,
            prices=tuple(sorted(prices.items())) if prices is not None else None,
        )
    )


class Writer:
    """Appends a plausible session to a real log: user turns, requests, replies, tool results."""

    def __init__(
        self,
        log: SessionLog,
        model: str = "glm",
        *,
        start: str = "session.start",
        prices: dict[str, Prices] | None = None,
    ) -> None:
        self.log = log
        self.model = model
        self.calls = 0
        log.append(start, {"recipe": recipe(prices), "model": model})

    @property
    def id(self) -> str:
        return self.log.id

    def user(self, text: str) -> int:
        return self.log.append("user.msg", {"text": text}).seq

    def req(self, *, model: str | None = None, trim: bool = False, ctx: str = "main") -> int:
        name = model or self.model
        origin = origin_to_json(Origin(model=name, server="fake"))
        data = {
            "model": name,
            "origin": origin,
            "digest": "sha256:" + "0" * 64,
            "elided": [],
            "estimate": 1000,
        }
        data["trim"] = trim
        return self.log.append("llm.req", data, ctx).seq

    def resp(self, req: int, text: str = "", *, ctx: str = "main", call: bool = False, **usage: Any) -> int:
        calls: tuple[ToolCall, ...] = ()
        if call:
            self.calls += 1
            calls = (ToolCall(id=f"c{self.calls}", name="fs-read", arguments='{"path": "src/app.py"}'),)
        block = ThinkingBlock(
            type="thinking", origin=Origin(model=self.model, server="fake"), data="SIGNATURE-XYZ"
        )
        response = Response(
            text=text,
            thinking=f"thinking about {text[:20]}",
            calls=calls,
            blocks=(block,),
            usage=Usage(**usage),
            finish="tool_calls" if call else "stop",
        )
        return self.log.append("llm.resp", {"req": req, "response": response_to_json(response)}, ctx).seq

    def tool(self, text: str, ctx: str = "main") -> int:
        data = {"call_id": f"c{self.calls}", "name": "fs-read", "text": text, "error": False}
        return self.log.append("tool.result", data, ctx).seq

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


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
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
