"""End to end: neutral requests through HttpBackend to each fake, the cached share each cache
model predicts, usage as each API reports it, and the wire as the fakes received it."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from nodwyn.dialects import session_key
from nodwyn.fakes import FakeApi, FakeServer
from nodwyn.fakes.cache import BLOCK, MIN_CACHED
from nodwyn.log import Store
from nodwyn.values.content import ImagePart, TextPart, UserMessage
from nodwyn.values.request import Request

from .convo import SECRET, Run, backend_for, converse, script, settings_for, share

TURNS = 6


@pytest.mark.parametrize(
    ("api", "family"),
    [
        ("openai-chat", "compatible"),
        ("openai-chat", "deepseek"),
        ("openai-chat", "cerebras"),
        ("openai-chat", "vllm"),
        ("openai-chat", "llamacpp"),
        ("responses", "compatible"),
    ],
)
def test_blocks_cache_reads_each_predecessor_in_whole_blocks(api: FakeApi, family: str) -> None:
    with FakeServer(api=api, family=family, script=script(TURNS), api_key=SECRET) as fake:
        with backend_for(fake.url) as backend:
            replies = converse(backend, settings_for(fake.url, api, family=family), TURNS)
        received = fake.requests
    assert len(received) == TURNS and not fake.remaining
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in received)
    assert replies[0].usage.cached_tokens in (0, None)
    for prev, cur in zip(replies, replies[1:], strict=False):
        cached, before = cur.usage.cached_tokens, prev.usage.prompt_tokens
        assert cached is not None and before is not None
        assert cached % BLOCK == 0 and cached >= MIN_CACHED
        assert before - BLOCK < cached <= before  # the whole predecessor but its last partial block
    print(f"{api}/{family}: cached share {share(replies):.1%} over {TURNS} requests")
    assert share(replies) > 0.6
    assert (
        replies[0].calls and replies[0].calls[0].name == "fs-read" and replies[1].text.startswith("Answer 1")
    )


def test_ollama_single_slot_shows_only_in_prefill_time() -> None:
    with FakeServer(api="ollama", script=script(TURNS)) as fake:
        settings = settings_for(fake.url, "ollama", credential=None)
        with backend_for(fake.url) as backend:
            replies = converse(backend, settings, TURNS)
        lookups = fake.lookups
        assert all("authorization" not in r.headers for r in fake.requests)  # no credential named, none sent
        bodies = [r.body for r in fake.requests]
    assert all(
        r.usage.cached_tokens is None for r in replies
    )  # Ollama reports no cached count: unknown, not 0
    assert {b["options"]["num_ctx"] for b in bodies} == {200_000} and all(
        b["truncate"] is False for b in bodies
    )
    for n, (prev, cur) in enumerate(zip(replies, replies[1:], strict=False), 1):
        assert cur.usage.prompt_tokens is not None and prev.usage.prompt_tokens is not None
        appended = cur.usage.prompt_tokens - prev.usage.prompt_tokens
        assert cur.timings.prefill_ms is not None
        assert appended - 1 <= cur.timings.prefill_ms <= appended + 1  # 1 ms per uncached token
        assert lookups[n].cached_tokens == cur.usage.prompt_tokens - cur.timings.prefill_ms
    assert replies[0].timings.prefill_ms == replies[0].usage.prompt_tokens


@pytest.mark.parametrize("ask", [None, "ephemeral", "1h"])
def test_anthropic_caches_only_when_the_entry_asks(ask: str | None) -> None:
    with FakeServer(api="anthropic", script=script(TURNS), api_key=SECRET) as fake:
        with backend_for(fake.url) as backend:
            replies = converse(backend, settings_for(fake.url, "anthropic", cache_control=ask), TURNS)
        received = fake.requests
    assert all(r.headers["x-api-key"] == SECRET and "authorization" not in r.headers for r in received)
    for r in replies:
        u = r.usage
        assert (
            u.prompt_tokens is not None and u.cached_tokens is not None and u.cache_write_tokens is not None
        )
    if ask is None:
        assert all("cache_control" not in r.body for r in received)
        assert all(r.usage.cached_tokens == 0 and r.usage.cache_write_tokens == 0 for r in replies)
        return
    assert all(r.body["cache_control"].get("ttl", "5m") == ("1h" if ask == "1h" else "5m") for r in received)
    first = replies[0].usage
    assert (
        first.cached_tokens == 0 and first.prompt_tokens is not None and first.cache_write_tokens is not None
    )
    assert (
        first.prompt_tokens - 1 <= first.cache_write_tokens <= first.prompt_tokens
    )  # all but a partial token
    for prev, cur in zip(replies, replies[1:], strict=False):
        assert prev.usage.prompt_tokens is not None and cur.usage.prompt_tokens is not None
        assert cur.usage.cached_tokens is not None and cur.usage.cache_write_tokens is not None
        # reads what the previous request wrote; writes what was appended
        assert prev.usage.prompt_tokens - 1 <= cur.usage.cached_tokens <= prev.usage.prompt_tokens
        assert cur.usage.cached_tokens + cur.usage.cache_write_tokens <= cur.usage.prompt_tokens
    print(f"anthropic cache_control={ask}: cached share {share(replies):.1%}")
    # thinking blocks went back signed, in place, and the fake accepted them
    assert replies[0].blocks and any(
        b.get("type") == "thinking"
        for m in received[1].body["messages"]
        for b in m["content"]
        if isinstance(b, dict)
    )


def test_replicas_low_share_without_a_session_key_high_with_one() -> None:
    turns = 24
    shares = {}
    for key in (None, "5" * 64):
        with FakeServer(
            api="openai-chat", family="openrouter", cache="replicas", seed=3, script=script(turns)
        ) as fake:
            settings = settings_for(fake.url, "openai-chat", family="openrouter")
            with backend_for(fake.url) as backend:
                replies = converse(backend, settings, turns, session_key=key)
            received = fake.requests
        shares[key] = share(replies)
        if key is None:
            assert all("x-session-id" not in r.headers and "prompt_cache_key" not in r.body for r in received)
        else:
            assert all(
                r.headers["x-session-id"] == key and r.body["prompt_cache_key"] == key for r in received
            )
    print(
        f"replicas (16, seeded): cached share without a session key {shares[None]:.1%}, "
        f"with one {shares['5' * 64]:.1%}"
    )
    assert shares[None] < 0.35 < 0.85 < shares["5" * 64]


def test_plan_credential_sends_codex_session_headers_and_an_api_key_does_not() -> None:
    for scopes, expect in ((frozenset({"chatgpt.tokens.use.direct"}), True), (frozenset(), False)):
        with FakeServer(api="responses", script=script(2)) as fake:
            with backend_for(fake.url, scopes=scopes) as backend:
                converse(backend, settings_for(fake.url, "responses"), 1, session_key="9" * 64)
                assert backend.list_models(settings_for(fake.url, "responses")) == ["fake-model"]
            post, listing = fake.requests
        for name in ("session-id", "thread-id", "x-client-request-id"):
            assert (post.headers.get(name) == "9" * 64) is expect
            assert name not in listing.headers
        assert post.body["prompt_cache_key"] == "9" * 64
        assert "9" * 64 not in listing.raw.decode() + str(listing.headers) + listing.path


@pytest.mark.parametrize("api", ["ollama", "openai-chat", "anthropic"])
def test_model_list_never_carries_the_session_key(api: FakeApi) -> None:
    with FakeServer(api=api, models=("a", "b")) as fake:
        with backend_for(fake.url) as backend:
            assert backend.list_models(settings_for(fake.url, api)) == ["a", "b"]
        (got,) = fake.requests
    assert got.method == "GET" and not any("session" in h for h in got.headers)


@pytest.mark.parametrize("api", ["ollama", "openai-chat", "responses", "anthropic"])
def test_on_delta_shows_the_reply_as_it_streams(api: FakeApi) -> None:
    seen: list[tuple[str, str]] = []
    with FakeServer(api=api, script=script(2)) as fake, backend_for(fake.url) as backend:
        settings = settings_for(fake.url, api, credential=None if api == "ollama" else "KEY")
        replies = converse(backend, settings, 2, on_delta=lambda k, t: seen.append((k, t)))
    text = "".join(t for k, t in seen if k == "text")
    thinking = "".join(t for k, t in seen if k == "thinking")
    assert len(seen) > 4, api
    assert text == replies[0].text + replies[1].text, api
    assert thinking.replace("\n", "") == (replies[0].thinking + replies[1].thinking).replace("\n", ""), api


@pytest.mark.parametrize("api", ["ollama", "openai-chat", "responses", "anthropic"])
def test_an_image_goes_as_the_bytes_the_sender_read(api: FakeApi) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    digest = hashlib.sha256(png).hexdigest()
    message = UserMessage(
        parts=(
            TextPart(text="what is this?"),
            ImagePart(digest=digest, media_type="image/png", width=8, height=8),
        )
    )
    with FakeServer(api=api, script=[{"text": "a picture"}]) as fake, backend_for(fake.url) as backend:
        settings = settings_for(
            fake.url, api, takes_images=True, credential=None if api == "ollama" else "KEY"
        )
        reply = backend.send(
            Request(system="s", tools=(), messages=(message,), max_output=50),
            settings,
            session_key=None,
            images={digest: png},
        )
        (got,) = fake.requests
    assert reply.text == "a picture"
    encoded = base64.b64encode(png).decode()
    assert encoded in got.raw.decode()
    assert digest not in got.raw.decode()  # the digest names the image in the log, never on the wire


def test_llamacpp_single_slot_reads_the_common_prefix_and_loses_it_to_another_conversation() -> None:
    fake = FakeServer(api="openai-chat", family="llamacpp", cache="single", script=script(TURNS + 1))
    with fake, backend_for(fake.url) as backend:
        settings = settings_for(fake.url, "openai-chat", family="llamacpp")
        replies = converse(backend, settings, TURNS)
        other = backend.send(
            Request(
                system="Another agent entirely.", tools=(), messages=(user_message("hi"),), max_output=10
            ),
            settings,
            session_key=None,
        )
    for prev, cur in zip(replies, replies[1:], strict=False):
        assert prev.usage.prompt_tokens is not None and cur.usage.cached_tokens is not None
        assert prev.usage.prompt_tokens - 1 <= cur.usage.cached_tokens <= prev.usage.prompt_tokens
        assert cur.timings.prefill_ms is not None and cur.usage.prompt_tokens is not None
        assert (
            cur.timings.prefill_ms == cur.usage.prompt_tokens - cur.usage.cached_tokens
        )  # timings.prompt_n, in ms
    assert (
        other.usage.cached_tokens is not None and other.usage.cached_tokens < 20
    )  # the slot held another prompt
    print(f"llamacpp single slot: cached share {share(replies):.1%} over {TURNS} requests")


def user_message(text: str) -> UserMessage:
    return UserMessage(parts=(TextPart(text=text),))


def test_the_session_key_goes_on_the_wire_and_never_into_the_log(tmp_path: Path) -> None:
    with (
        FakeServer(api="openai-chat", family="openrouter", script=script(3)) as fake,
        Store(tmp_path).create() as log,
    ):
        key = session_key(log.id)
        settings = settings_for(fake.url, "openai-chat", family="openrouter", credential=None)
        run = Run(log)
        for _ in range(3):
            run.ask(settings, session_key=key)
        received = fake.requests
        digests = [e.data["digest"] for e in log.read(1) if e.kind == "llm.req"]
    assert all(r.headers["x-session-id"] == key and r.body["prompt_cache_key"] == key for r in received)
    logged = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert key.encode() not in logged  # neither in the requests' records nor anywhere else
    assert digests == [b.digest for b in run.builds]  # the digest is of the neutral request, keyless


@pytest.mark.parametrize(
    ("api", "family", "names"),
    [
        ("openai-chat", "compatible", ("x-session-id", "x-session-affinity")),
        ("openai-chat", "vllm", ("x-session-id", "x-session-affinity")),
        ("responses", "compatible", ("x-session-id", "x-session-affinity")),
        ("openai-chat", "openrouter", ("x-session-id",)),
        ("openai-chat", "fireworks", ("x-session-affinity",)),
        ("openai-chat", "baseten", ("x-baseten-session-id",)),
    ],
)
@pytest.mark.parametrize("mode", ["session", "header"])
def test_session_key_goes_as_both_headers_unless_the_server_names_its_own(
    api: FakeApi, family: str, names: tuple[str, ...], mode: str
) -> None:
    """Whenever the key is sent, it goes as both
    X-Session-Id and X-Session-Affinity, except to a server with a session header of its own."""
    key = "7" * 64
    with FakeServer(api=api, family=family, script=script(2)) as fake:
        settings = settings_for(fake.url, api, family=family, cache_key=mode)
        with backend_for(fake.url) as backend:
            converse(backend, settings, 1, session_key=key)
            backend.list_models(settings)
        post, listing = fake.requests
    sent = {k.lower() for k, v in post.headers.items() if v == key}
    assert sent == set(names)
    assert key not in str(listing.headers)
