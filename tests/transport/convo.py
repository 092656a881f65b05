"""Conversations driven through HttpBackend against a fake: ``converse`` builds each Request by
appending the reply, its tool results and the next user message, as the window does; ``Run`` is a
session as the agent loop runs one, recorded through ``nodwyn.testing.SessionBuilder``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nodwyn.log import SessionLog
from nodwyn.testing import SessionBuilder, recipe
from nodwyn.transport.credentials import Credential, Credentials, origin_of
from nodwyn.transport.http import HttpBackend
from nodwyn.values.content import AssistantMessage, Message, TextPart, ToolMessage, UserMessage
from nodwyn.values.events import Event, Payload, ToolResult
from nodwyn.values.model import Api, ModelEntry
from nodwyn.values.recipe import WindowLimits
from nodwyn.values.request import Request, Response, ToolSpec
from nodwyn.window import Build

SYSTEM = "You are a careful coding agent. Read before you write; run the tests after. " * 60
TOOLS = (
    ToolSpec(
        name="fs-read",
        description="Read a file of the workspace.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
)
SECRET = "sk-fake-0123456789abcdef"


def script(turns: int) -> list[dict[str, Any]]:
    """Replies alternating a tool call (with thinking) and a plain answer."""
    out: list[dict[str, Any]] = []
    for n in range(turns):
        if n % 2 == 0:
            out.append(
                {
                    "thinking": f"I should read file {n}",
                    "text": f"Reading {n}.",
                    "calls": [{"name": "fs-read", "arguments": {"path": f"src/{n}.py"}}],
                }
            )
        else:
            out.append(
                {"thinking": "That answers it.", "text": f"Answer {n}: " + "the file does this. " * 10}
            )
    return out


def settings_for(url: str, api: Api, **extra: Any) -> ModelEntry:
    fields: dict[str, Any] = {"credential": "KEY", **extra}
    return ModelEntry(name="fake", api=api, model="fake-model", context_size=200_000, base_url=url, **fields)


def backend_for(url: str, **kw: Any) -> HttpBackend:
    cred = Credential(name="KEY", value=SECRET, origins=frozenset({origin_of(url)}), **kw)
    return HttpBackend(Credentials.of([cred]))


def user(text: str) -> UserMessage:
    return UserMessage(parts=(TextPart(text=text),))


def converse(
    backend: HttpBackend,
    settings: ModelEntry,
    requests: int,
    *,
    session_key: str | None = "k" * 64,
    on_delta: Callable[[str, str], None] | None = None,
) -> list[Response]:
    messages: list[Message] = [user("Please look at the repository and explain it. " * 10)]
    replies = []
    for _ in range(requests):
        request = Request(system=SYSTEM, tools=TOOLS, messages=tuple(messages), max_output=2000)
        reply = backend.send(request, settings, session_key=session_key, on_delta=on_delta)
        replies.append(reply)
        messages.append(
            AssistantMessage(text=reply.text, thinking=reply.thinking, calls=reply.calls, blocks=reply.blocks)
        )
        for call in reply.calls:
            messages.append(
                ToolMessage(call_id=call.id, name=call.name, text=f"contents of {call.arguments} " * 40)
            )
        if not reply.calls:
            messages.append(user("Thanks. Next question: " + "what about tests? " * 8))
    return replies


def share(replies: list[Response]) -> float:
    prompt = sum(r.usage.prompt_tokens or 0 for r in replies)
    return sum(r.usage.cached_tokens or 0 for r in replies) / prompt


ROOMY = WindowLimits(
    high_water=50_000, low_water=20_000, max_result_tokens=2000, output_reserve=200, ceiling=60_000
)


class Run:
    """A session as the agent loop runs one: recorded through ``nodwyn.testing.SessionBuilder``
    on ``log``, sent by HttpBackend to a fake, the reply and its tool results logged."""

    def __init__(self, log: SessionLog, limits: WindowLimits = ROOMY, version: int = 19) -> None:
        rec = recipe(version, system="You are careful.", tools=TOOLS, limits=limits, context_size=100_000)
        self.session = SessionBuilder(rec, log=log, model="model-a")
        self.backend = HttpBackend(Credentials())
        self.builds: list[Build] = []
        self.replies: list[Response] = []
        self.results: list[int] = []  # seq of each tool result
        self.session.user("Fix the bug.")

    def append(self, payload: Payload) -> Event:
        return self.session.add(payload)

    def ask(self, settings: ModelEntry, result: str = "contents", session_key: str | None = None) -> Response:
        req, r = self.session.exchange(self.backend, settings, session_key=session_key)
        self.builds.append(self.session.builds[req.seq])
        self.replies.append(r)
        for c in r.calls:
            answer = ToolResult(call_id=c.id, name=c.name, text=f"{result} of {c.arguments}", error=False)
            self.results.append(self.append(answer).seq)
        return r
