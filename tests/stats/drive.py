"""A session driven as the agent loop drives one: a live Window builds each request, its llm.req
is logged and fed back, HttpBackend sends it to a fake provider on 127.0.0.1, and the reply and
its tool results are logged. Used where the diagnosis must see real requests and real cache
reports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodwyn.log import SessionLog, Store
from nodwyn.transport.credentials import Credential, Credentials, origin_of
from nodwyn.transport.http import HttpBackend
from nodwyn.values.codec import origin_to_json, recipe_to_json, response_to_json
from nodwyn.values.events import Event
from nodwyn.values.model import ModelSettings, Prices
from nodwyn.values.recipe import Recipe, WindowLimits
from nodwyn.values.request import Response, ToolSpec
from nodwyn.window import Window

SYSTEM = "You are a careful coding agent. Read before you write; run the tests after. " * 60
TOOLS = (
    ToolSpec(
        name="fs-read",
        description="Read a file of the workspace.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
)
SECRET = "sk-fake-0123456789abcdef"


def recipe(limits: WindowLimits, version: int = 19, prices: Any = None) -> Recipe:
    return Recipe(
        version=version, system=SYSTEM, tools=TOOLS, limits=limits, context_size=64000, prices=prices
    )


def reading_script(n: int) -> list[dict[str, Any]]:
    """``n`` replies, each reading one more file."""
    return [
        {"text": f"Reading file {i}.", "calls": [{"name": "fs-read", "arguments": {"path": f"src/m{i}.py"}}]}
        for i in range(n)
    ]


def settings(url: str, name: str, model: str, api: Any = "openai-chat", **extra: Any) -> ModelSettings:
    return ModelSettings(
        name=name, api=api, model=model, context_size=64000, base_url=url, credential="KEY", **extra
    )


class Driver:
    def __init__(
        self,
        store: Store,
        limits: WindowLimits,
        models: Mapping[str, ModelSettings],
        model: str,
        *,
        result_bytes: int = 3000,
        session_key: str | None = "s" * 64,
        version: int = 19,
        prices: Mapping[str, Prices] | None = None,
    ) -> None:
        url = next(iter(models.values())).base_url
        assert url is not None
        cred = Credential(name="KEY", value=SECRET, origins=frozenset({origin_of(url)}))
        self.backend = HttpBackend(Credentials.of([cred]), max_retries=0)
        self.log: SessionLog = store.create()
        self.window = Window()
        self.models = dict(models)
        self.model = model
        self.result_bytes = result_bytes
        self.session_key = session_key
        self.results: list[int] = []  # seqs of tool results
        recorded = tuple(sorted(prices.items())) if prices is not None else None
        start = {"recipe": recipe_to_json(recipe(limits, version, recorded)), "model": model}
        self.append("session.start", start)

    def append(self, kind: str, data: dict[str, Any], ctx: str = "main") -> Event:
        event = self.log.append(kind, data, ctx)
        self.window.feed(event)
        return event

    def user(self, text: str) -> int:
        return self.append("user.msg", {"text": text}).seq

    def switch(self, model: str) -> int:
        self.model = model
        return self.append("model.switch", {"model": model}).seq

    def fold(self, target: int, text: str = "[folded: not needed any more]") -> int:
        return self.append("result.fold", {"target": target, "text": text}).seq

    def request(self) -> tuple[int, Response]:
        s = self.models[self.model]
        build = self.window.build("main", origin=s.origin)
        req = self.append(
            "llm.req",
            {"model": s.name, "origin": origin_to_json(s.origin), "digest": build.digest, **build.record},
        )
        reply = self.backend.send(build.request, s, session_key=self.session_key)
        self.append("llm.resp", {"req": req.seq, "response": response_to_json(reply)})
        for n, call in enumerate(reply.calls):
            line = f"{req.seq:05d}.{n} {call.arguments} line of the file being read\n"
            text = (line * (self.result_bytes // len(line) + 1))[: self.result_bytes]
            seq = self.append(
                "tool.result", {"call_id": call.id, "name": call.name, "text": text, "error": False}
            )
            self.results.append(seq.seq)
        return req.seq, reply
