"""Scripted sessions through the real log and the real window, as the agent loop records them.

A ``Script`` appends each event with ``log.append`` (so it is redacted as in a real session),
feeds the event the log returns to a ``Window``, and sends requests with
``record.Recorder``, keeping the canonical bytes it built: the bytes the provider layer
would have been given. Tests compare replay against those, never against digests written by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nodwyn.log import SessionLog, Store
from nodwyn.record import Recorder, resume_session, start_session
from nodwyn.values import codec
from nodwyn.values.canonical import canonical_bytes
from nodwyn.values.content import Origin, ThinkingBlock, ToolCall
from nodwyn.values.events import Event
from nodwyn.values.recipe import Recipe, WindowLimits
from nodwyn.values.request import Response, ToolSpec, Usage
from nodwyn.window import Build, TurnOptions, Window

ORIGIN = Origin(model="test-model", url="http://127.0.0.1:9/v1", credential="TEST_KEY")
OTHER_ORIGIN = Origin(model="other-model", server="elsewhere")

TOOLS = (
    ToolSpec(
        name="fs-read",
        description="Read a file.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSpec(
        name="shell",
        description="Run a command.",
        parameters={"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    ),
)


def recipe(
    version: int = 19,
    *,
    system: str = "You are a careful coding agent.",
    tools: Sequence[ToolSpec] = TOOLS,
    high_water: int = 60_000,
    low_water: int = 30_000,
    max_result_tokens: int = 3_072,
    output_reserve: int = 8_192,
    ceiling: int = 80_000,
    context_size: int = 98_304,
    keep_alive: str | None = None,
    task_header: str | None = None,
    plan_header: str | None = None,
) -> Recipe:
    return Recipe(
        version=version,
        system=system,
        tools=tuple(tools),
        limits=WindowLimits(
            high_water=high_water,
            low_water=low_water,
            max_result_tokens=max_result_tokens,
            output_reserve=output_reserve,
            ceiling=ceiling,
        ),
        context_size=context_size,
        keep_alive=keep_alive,
        task_header=task_header,
        plan_header=plan_header,
    )


class Script:
    """One recorded session. ``sent[seq]`` is the canonical request each ``llm.req`` seq sent."""

    def __init__(self, store: Store, rec: Recipe, model: str = "test") -> None:
        self.store = store
        self.model = model
        self.log: SessionLog | None = start_session(store, rec, model, "/work/space")
        self.id = self.log.id
        self.window = Window()
        for ev in self.log.read():
            self.window.feed(ev)
        self.sent: dict[int, bytes] = {}
        self.builds: dict[int, Build] = {}
        self._calls = 0

    # -- events ------------------------------------------------------------------------------

    def event(self, kind: str, data: dict[str, Any], ctx: str = "main") -> Event:
        assert self.log is not None, "the session is closed; resume it first"
        ev = self.log.append(kind, data, ctx=ctx)
        self.window.feed(ev)
        return ev

    def user(self, text: str, ctx: str = "main", images: list[dict[str, Any]] | None = None) -> Event:
        data: dict[str, Any] = {"text": text}
        if images:
            data["images"] = images
        return self.event("user.msg", data, ctx)

    def request(
        self,
        ctx: str = "main",
        origin: Origin = ORIGIN,
        turn: TurnOptions | None = None,
        withheld: dict[str, str] | None = None,
    ) -> Event:
        assert self.log is not None
        b, ev = Recorder(self.log, self.window).request(
            ctx, origin, turn=turn, withheld=withheld, model=self.model
        )
        sent = canonical_bytes(codec.request_to_json(b.request))
        assert b.canonical == sent, "the window's incremental bytes differ from the request's canonical form"
        self.sent[ev.seq] = sent
        self.builds[ev.seq] = b
        return ev

    def reply(
        self,
        req: Event,
        text: str = "",
        *,
        thinking: str = "",
        calls: Sequence[tuple[str, str]] = (),
        blocks: Sequence[ThinkingBlock] = (),
    ) -> tuple[Event, list[ToolCall]]:
        made = []
        for name, args in calls:
            self._calls += 1
            made.append(ToolCall(id=f"call_{self._calls}", name=name, arguments=args))
        resp = Response(
            text=text,
            thinking=thinking,
            calls=tuple(made),
            blocks=tuple(blocks),
            usage=Usage(prompt_tokens=100, cached_tokens=0, output_tokens=10),
            finish="tool_calls" if made else "stop",
            model="test-model",
        )
        ev = self.event("llm.resp", {"req": req.seq, "response": codec.response_to_json(resp)}, req.ctx)
        return ev, made

    def result(
        self,
        call: ToolCall,
        text: str,
        ctx: str = "main",
        error: bool = False,
        rng: dict[str, int] | None = None,
    ) -> Event:
        data: dict[str, Any] = {"call_id": call.id, "name": call.name, "text": text, "error": error}
        if rng is not None:
            data["range"] = rng
        return self.event("tool.result", data, ctx)

    def turn(
        self,
        ask: str,
        steps: Sequence[Sequence[tuple[str, str, str]]] = (),
        answer: str = "done",
        ctx: str = "main",
        thinking: str = "",
    ) -> Event:
        """A person's message, then one request per step of tool calls (name, args, result), then the answer.

        Returns the final reply.
        """
        self.user(ask, ctx)
        for step in steps:
            req = self.request(ctx)
            _, calls = self.reply(req, thinking=thinking, calls=[(n, a) for n, a, _ in step])
            for call, (_, _, out) in zip(calls, step, strict=True):
                self.result(call, out, ctx)
        req = self.request(ctx)
        ev, _ = self.reply(req, answer, thinking=thinking)
        return ev

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None

    def resume(self, rec: Recipe, model: str | None = None) -> None:
        """Close, resume under ``rec``, and rebuild the window from the original events."""
        self.close()
        if model is not None:
            self.model = model
        self.log = resume_session(self.store, self.id, rec, self.model)
        self.window = Window()
        for ev in self.log.read():
            self.window.feed(ev)
