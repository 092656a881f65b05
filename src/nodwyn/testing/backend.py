"""A scripted model backend: a real fake provider on 127.0.0.1 behind the real ``HttpBackend``,
answering one scripted step per request, that fails a test on a request the script did not expect
and on steps left unused."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from nodwyn.fakes import FakeApi, FakeServer, ReceivedRequest
from nodwyn.transport import Credentials, HttpBackend
from nodwyn.values.content import TextPart, UserMessage
from nodwyn.values.model import ModelEntry
from nodwyn.values.request import Request, Response


class ScriptMismatch(AssertionError):
    """The requests a test made differ from its script (an extra request, a failed expectation,
    or steps never used). An ``AssertionError``, so a test fails with the step named."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One request and its answer. ``reply`` is a fake script item (``text``, ``thinking``,
    ``calls``, ``error``, ...: see ``nodwyn.fakes.script``); ``expect`` checks the request before it
    is sent and fails the step by raising or returning ``False``."""

    reply: Mapping[str, Any] = field(default_factory=dict)
    expect: Callable[[Request], object] | None = None


def _last_user_text(request: Request) -> str:
    for message in reversed(request.messages):
        if isinstance(message, UserMessage):
            return " ".join(p.text for p in message.parts if isinstance(p, TextPart))[:80]
    return ""


class ScriptedBackend:
    """``with ScriptedBackend([Step(reply={"text": "hi"})]) as backend:`` gives a ``send`` with the
    agent's ``Backend`` signature and ``backend.settings`` (a model entry pointing at the fake).
    ``wire`` is what went over the wire. Leaving the block fails if a step was not used."""

    def __init__(
        self,
        steps: Iterable[Step | Mapping[str, Any]],
        *,
        api: FakeApi = "openai-chat",
        name: str = "fake",
        model: str = "fake-model",
        context_size: int = 32_000,
        fake: Mapping[str, Any] | None = None,
        **settings: Any,
    ) -> None:
        self.steps = [s if isinstance(s, Step) else Step(reply=s) for s in steps]
        self.used = 0
        self._fake = FakeServer(api=api, script=[s.reply for s in self.steps], **dict(fake or {}))
        self._fake.start()
        self.settings = ModelEntry(
            name=name, api=api, model=model, context_size=context_size, base_url=self._fake.url, **settings
        )
        self._http = HttpBackend(Credentials(), max_retries=0)

    @property
    def url(self) -> str:
        return self._fake.url

    @property
    def wire(self) -> list[ReceivedRequest]:
        return self._fake.requests

    def send(
        self,
        request: Request,
        settings: ModelEntry,
        *,
        session_key: str | None,
        on_delta: Callable[[str, str], None] | None = None,
        images: Mapping[str, bytes] | None = None,
        diagnose_against: str | None = None,
    ) -> Response:
        if self.used >= len(self.steps):
            raise ScriptMismatch(
                f"request {self.used + 1} was not scripted (the script has {len(self.steps)} steps); "
                f"its last user message: {_last_user_text(request)!r}"
            )
        step = self.steps[self.used]
        self.used += 1
        if step.expect is not None and step.expect(request) is False:
            raise ScriptMismatch(
                f"step {self.used}: the request is not what the script expects "
                f"(last user message: {_last_user_text(request)!r})"
            )
        return self._http.send(
            request,
            settings,
            session_key=session_key,
            on_delta=on_delta,
            images=images,
            diagnose_against=diagnose_against,
        )

    def close(self, *, check: bool = True) -> None:
        """Stop the fake; fail if steps were not used (unless ``check`` is false)."""
        self._http.close()
        self._fake.close()
        left = len(self.steps) - self.used
        if left and check:
            raise ScriptMismatch(
                f"{left} of {len(self.steps)} scripted steps were never requested; "
                f"the first unused is step {self.used + 1}: {dict(self.steps[self.used].reply)!r}"
            )

    def __enter__(self) -> ScriptedBackend:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(check=kind is None)  # a test that failed reports that, not the unused steps
