"""A session driven as the agent loop drives one: recorded through ``nodwyn.testing.SessionBuilder``
(the agent's recording path), sent by HttpBackend to a fake provider on 127.0.0.1, the reply and
its tool results logged. Used where the diagnosis must see real requests and real cache
reports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodwyn.log import SessionLog, Store
from nodwyn.testing import SessionBuilder, recipe
from nodwyn.transport.credentials import Credential, Credentials, origin_of
from nodwyn.transport.http import HttpBackend
from nodwyn.values.events import Event
from nodwyn.values.model import ModelEntry, Prices
from nodwyn.values.recipe import WindowLimits
from nodwyn.values.request import Response, ToolSpec

SYSTEM = "You are a careful coding agent. Read before you write; run the tests after. " * 60
TOOLS = (
    ToolSpec(
        name="fs-read",
        description="Read a file of the workspace.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
)
SECRET = "sk-fake-0123456789abcdef"


def reading_script(n: int) -> list[dict[str, Any]]:
    """``n`` replies, each reading one more file."""
    return [
        {"text": f"Reading file {i}.", "calls": [{"name": "fs-read", "arguments": {"path": f"src/m{i}.py"}}]}
        for i in range(n)
    ]


def settings(url: str, name: str, model: str, api: Any = "openai-chat", **extra: Any) -> ModelEntry:
    return ModelEntry(
        name=name, api=api, model=model, context_size=64000, base_url=url, credential="KEY", **extra
    )


class Driver:
    """A ``SessionBuilder`` on disk talking to a fake through ``HttpBackend``; each tool call is
    answered with ``result_bytes`` of file text."""

    def __init__(
        self,
        store: Store,
        limits: WindowLimits,
        models: Mapping[str, ModelEntry],
        model: str,
        *,
        result_bytes: int = 3000,
        session_key: str | None = "s" * 64,
        version: int = 19,
        prices: Mapping[str, Prices] | None = None,
        cache_ask: str | None = None,
    ) -> None:
        url = next(iter(models.values())).base_url
        assert url is not None
        cred = Credential(name="KEY", value=SECRET, origins=frozenset({origin_of(url)}))
        self.backend = HttpBackend(Credentials.of([cred]), max_retries=0)
        recorded = tuple(sorted(prices.items())) if prices is not None else None
        self.recipe = recipe(
            version, system=SYSTEM, tools=TOOLS, limits=limits, context_size=64000, prices=recorded
        )
        self.session = SessionBuilder(self.recipe, store=store, model=model, workspace=None)
        self.models = dict(models)
        self.result_bytes = result_bytes
        self.session_key = session_key
        self.results: list[int] = []  # seqs of tool results
        self.cache_ask = cache_ask  # what each request records it asked of the cache

    @property
    def log(self) -> SessionLog:
        log = self.session.log
        assert isinstance(log, SessionLog)
        return log

    def resume(self) -> Event:
        """``session.resume`` under the same recipe, as ``nodwyn resume`` records it."""
        return self.session.resume(self.recipe)

    def user(self, text: str) -> int:
        return self.session.user(text).seq

    def switch(self, model: str) -> int:
        return self.session.switch(model).seq

    def fold(self, target: int, text: str = "[folded: not needed any more]") -> int:
        return self.session.fold(target, text).seq

    def request(self) -> tuple[int, Response]:
        s = self.models[self.session.model]
        req, reply = self.session.exchange(
            self.backend, s, session_key=self.session_key, cache_ask=self.cache_ask
        )
        for n, call in enumerate(reply.calls):
            line = f"{req.seq:05d}.{n} {call.arguments} line of the file being read\n"
            text = (line * (self.result_bytes // len(line) + 1))[: self.result_bytes]
            self.results.append(self.session.result(call, text).seq)
        return req.seq, reply
