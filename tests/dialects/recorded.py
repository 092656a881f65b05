"""Recorded provider traffic (tests/data/traffic): cassettes, a loopback server that plays a
recorded reply back, and the oracles the official SDKs build from the same bytes.

A case is one interaction of a cassette whose request went to an API nodwyn speaks. Its folder
names the model entry: ``<api>/<family or server>/<file>.yaml``. The oracle of a reply is what the
official SDK (``openai``, ``anthropic``) makes of the recorded bytes, served to it over HTTP, with
its own stream accumulator (``chat.completions.stream``, ``responses.stream``,
``messages.stream``); nothing here is a typed-in value.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, get_args

import anthropic
import openai
import orjson
import yaml

from nodwyn.dialects.wire import join_text
from nodwyn.values.model import Api, Family, ModelEntry
from nodwyn.values.request import Response

TRAFFIC = Path(__file__).parent.parent / "data" / "traffic"
API_PATHS = {"openai-chat": "/chat/completions", "responses": "/responses", "anthropic": "/messages"}
# A cassette folder's names read as the literals they are (a KeyError names a folder that is neither)
APIS: dict[str, Api] = {a: a for a in get_args(Api)}
FAMILIES: dict[str, Family] = {f: f for f in get_args(Family)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One recorded interaction: the request the real client sent and the reply it got."""

    path: Path  # the cassette
    index: int  # the interaction in it
    api: Api
    family: str  # the folder under the api: a chat family, or the server's name
    request: dict[str, Any] = field(hash=False)
    status: int
    content_type: str
    body: bytes = field(hash=False)
    previous: Case | None = field(default=None, hash=False)  # the cassette's case before this one

    @property
    def id(self) -> str:
        return f"{self.api}/{self.family}/{self.path.stem}#{self.index}"

    @property
    def streamed(self) -> bool:
        return self.content_type.startswith("text/event-stream")

    @property
    def model(self) -> str:
        m = self.request.get("model")
        return m if isinstance(m, str) else "recorded-model"

    def settings(self, base_url: str = "http://127.0.0.1:9") -> ModelEntry:
        """The model entry the folder names (never guessed from the recorded host)."""
        if self.api == "openai-chat":
            family = FAMILIES[self.family]
            return ModelEntry(
                name="recorded",
                api="openai-chat",
                model=self.model,
                context_size=200_000,
                family=family,
                base_url=base_url,
                server=None if family == "compatible" else family,
            )
        return ModelEntry(
            name="recorded",
            api=self.api,
            model=self.model,
            context_size=200_000,
            base_url=base_url,
            server=self.family,
            keep_reasoning=self.api == "responses",
        )


def _header(headers: Any, name: str) -> str:
    value = (headers or {}).get(name) or (headers or {}).get(name.title()) or [""]
    return str(value[0] if isinstance(value, list) else value)


def load(path: Path) -> list[Case]:
    """The cases of one cassette, in order (interactions to other APIs are not cases)."""
    rel = path.relative_to(TRAFFIC)
    api, family = APIS[rel.parts[0]], rel.parts[1]
    doc = yaml.safe_load(path.read_text())
    out: list[Case] = []
    for i, it in enumerate(doc.get("interactions") or []):
        req, resp = it["request"], it["response"]
        uri = str(req.get("uri", "")).split("?", 1)[0]
        if not uri.endswith(API_PATHS[api]) or req.get("method") != "POST":
            continue
        body = resp.get("body") or {}
        if isinstance(body, dict) and isinstance(body.get("string"), str):
            raw = body["string"].encode()
        else:
            raw = orjson.dumps(resp.get("parsed_body"))
        ctype = _header(resp.get("headers"), "content-type") or "application/json"
        status = int((resp.get("status") or {}).get("code", 200))
        out.append(
            Case(
                path=path,
                index=i,
                api=api,
                family=family,
                request=req.get("parsed_body") or {},
                status=status,
                content_type=ctype,
                body=raw,
                previous=out[-1] if out else None,
            )
        )
    return out


def all_cases() -> list[Case]:
    return [c for p in sorted(TRAFFIC.rglob("*.yaml")) for c in load(p)]


# -- a loopback server that plays a recorded reply back -----------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.server.received.append(self.rfile.read(length) if length else b"")
        case = self.server.case
        self.send_response(case.status)
        self.send_header("content-type", case.content_type)
        self.send_header("connection", "close")
        self.end_headers()
        try:  # in pieces that split lines and events, as a network does
            for i in range(0, len(case.body), 997):
                self.wfile.write(case.body[i : i + 997])
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    case: Case
    received: list[bytes]


@contextmanager
def serve(case: Case) -> Iterator[str]:
    """The recorded reply, answered to every POST on 127.0.0.1; yields the base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.case = case
    server.received = []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# -- what a reply says, in one shape for nodwyn and for the SDK ---------------------------------


@dataclass(slots=True, kw_only=True)
class Seen:
    """What a reply holds that nodwyn must get right: text, thinking, calls, the blocks that go
    back (as the provider gave them), usage, and the Responses phase."""

    text: str
    thinking: str
    calls: list[tuple[str, str, Any]]  # (id, name, arguments as a JSON value)
    blocks: list[Any]
    usage: dict[str, int | None]
    phase: str | None = None


def _args(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return text


def seen_by_nodwyn(case: Case, r: Response) -> Seen:
    blocks: list[Any] = []
    for b in r.blocks:
        if b.type == "reasoning_details":
            blocks.extend(orjson.loads(b.data))
        elif b.type == "reasoning":
            item = orjson.loads(b.data)
            blocks.append({"id": item.get("id"), "encrypted_content": item.get("encrypted_content")})
        elif b.type == "thinking":
            blocks.append({"type": "thinking", "thinking": b.text, "signature": b.data})
        else:
            blocks.append({"type": "redacted_thinking", "data": b.data})
    u = r.usage
    return Seen(
        text=r.text,
        thinking=r.thinking,
        calls=[(c.id, c.name, _args(c.arguments)) for c in r.calls],
        blocks=blocks,
        usage={
            "prompt": u.prompt_tokens,
            "cached": u.cached_tokens,
            "cache_write": u.cache_write_tokens,
            "output": u.output_tokens,
        },
        phase=getattr(r, "phase", None) if case.api == "responses" else None,
    )


class SdkError(Exception):
    """The official SDK refused the reply (an error the API sent, in a status or in the stream)."""


def seen_by_sdk(case: Case, url: str) -> Seen:
    """What the official SDK makes of the recorded reply, served to it over HTTP."""
    try:
        if case.api == "openai-chat":
            return _chat(case, url)
        if case.api == "responses":
            return _responses(case, url)
        return _anthropic(case, url)
    except (openai.APIError, anthropic.APIError) as exc:
        raise SdkError(f"{type(exc).__name__}: {exc}") from exc


def _extra(model: Any) -> dict[str, Any]:
    return dict(getattr(model, "model_extra", None) or {})


def _chat(case: Case, url: str) -> Seen:
    client = openai.OpenAI(base_url=url + "/v1", api_key="recorded", max_retries=0)
    ask: dict[str, Any] = {"model": case.model, "messages": [{"role": "user", "content": "hi"}]}
    chunks: list[Any] = []
    if case.streamed:
        with client.chat.completions.stream(**ask) as stream:
            for event in stream:
                if event.type == "chunk":
                    chunks.append(event.chunk)
            completion: Any = stream.get_final_completion()
        usage = next((c.usage for c in reversed(chunks) if c.usage is not None), None)
    else:
        completion = client.chat.completions.create(**ask)
        usage = completion.usage
    msg = completion.choices[0].message
    extra = _extra(msg)
    thinking = extra.get("reasoning") or extra.get("reasoning_content") or ""
    details = extra.get("reasoning_details")
    blocks: list[Any] = []
    if case.family != "cerebras" and isinstance(details, list):
        blocks = _details_oracle(details, chunks) if case.streamed else details
    calls = [(tc.id or "", tc.function.name, _args(tc.function.arguments)) for tc in msg.tool_calls or []]
    u: dict[str, int | None] = {"prompt": None, "cached": None, "cache_write": None, "output": None}
    if usage is not None:
        ptd = usage.prompt_tokens_details
        cached = ptd.cached_tokens if ptd is not None else None
        if cached is None:
            cached = _extra(usage).get("prompt_cache_hit_tokens")
        u = {
            "prompt": usage.prompt_tokens,
            "cached": cached,
            "cache_write": getattr(ptd, "cache_write_tokens", None) if ptd is not None else None,
            "output": usage.completion_tokens,
        }
    return Seen(text=msg.content or "", thinking=thinking, calls=calls, blocks=blocks, usage=u)


def _details_oracle(accumulated: list[Any], chunks: list[Any]) -> list[Any]:
    """OpenRouter's streamed reasoning_details as the SDK's accumulator joins them: the fragmented
    fields (text, summary, signature, data) are its concatenation; the fields every fragment
    repeats (type, format, id), which it would concatenate too, are the first non-empty value a
    fragment of that entry gave (as the SDK parsed the chunk)."""
    firsts: dict[int, dict[str, Any]] = {}
    for c in chunks:
        for ch in c.choices:
            for f in _extra(ch.delta).get("reasoning_details") or []:
                if isinstance(f, dict) and isinstance(f.get("index"), int):
                    slot = firsts.setdefault(f["index"], {})
                    for k, v in f.items():
                        if slot.get(k) in (None, "") and v not in (None, ""):
                            slot[k] = v
                        slot.setdefault(k, v)
    out = []
    for entry in accumulated:
        if not isinstance(entry, dict):
            out.append(entry)
            continue
        index = entry.get("index")
        first = firsts.get(index, {}) if isinstance(index, int) else {}
        out.append(
            {
                k: (v if k in {"text", "summary", "signature", "data", "index"} else first.get(k, v))
                for k, v in entry.items()
            }
        )
    return out


def _responses(case: Case, url: str) -> Seen:
    client = openai.OpenAI(base_url=url + "/v1", api_key="recorded", max_retries=0)
    done: dict[str, Any] = {}  # reasoning items as each output_item.done event gave them
    if case.streamed:
        with client.responses.stream(model=case.model, input="hi") as stream:
            for event in stream:
                if event.type == "response.output_item.done" and event.item.type == "reasoning":
                    done[event.item.id] = event.item
            resp: Any = stream.get_final_response()
    else:
        resp = client.responses.create(model=case.model, input="hi")
    thoughts: list[str] = []
    calls: list[tuple[str, str, Any]] = []
    blocks: list[Any] = []
    phase: str | None = None
    for item in resp.output:
        if item.type == "message":
            phase = getattr(item, "phase", None) or phase
        elif item.type == "reasoning":
            # The item goes back as output_item.done gave it: OpenAI's terminal event carries
            # another encryption of it, and the real client sent the streamed one back (accepted).
            item = done.get(item.id, item)
            summary = join_text([s.text for s in item.summary])
            if not summary:
                summary = join_text([c.text for c in item.content or [] if c.type == "reasoning_text"])
            thoughts.append(summary)
            blocks.append({"id": item.id, "encrypted_content": item.encrypted_content})
        elif item.type == "function_call":
            calls.append((item.call_id, item.name, _args(item.arguments)))
    texts = [
        p.text if p.type == "output_text" else p.refusal
        for item in resp.output
        if item.type == "message"
        for p in item.content
    ]
    usage = resp.usage
    u: dict[str, int | None] = {"prompt": None, "cached": None, "cache_write": None, "output": None}
    if usage is not None:
        itd = usage.input_tokens_details
        u = {
            "prompt": usage.input_tokens,
            "cached": itd.cached_tokens,
            "cache_write": getattr(itd, "cache_write_tokens", None),
            "output": usage.output_tokens,
        }
    return Seen(
        text="".join(texts), thinking=join_text(thoughts), calls=calls, blocks=blocks, usage=u, phase=phase
    )


def _anthropic(case: Case, url: str) -> Seen:
    client = anthropic.Anthropic(base_url=url, api_key="recorded", max_retries=0)
    ask: dict[str, Any] = {
        "model": "recorded-model",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
    }
    if case.streamed:
        with client.messages.stream(**ask) as stream:
            msg: Any = stream.get_final_message()
    else:
        msg = client.messages.create(**ask)
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[tuple[str, str, Any]] = []
    blocks: list[Any] = []
    for b in msg.content:
        if b.type == "text":
            texts.append(b.text)
        elif b.type == "thinking":
            thoughts.append(b.thinking)
            blocks.append({"type": "thinking", "thinking": b.thinking, "signature": b.signature})
        elif b.type == "redacted_thinking":
            blocks.append({"type": "redacted_thinking", "data": b.data})
        elif b.type == "tool_use":
            calls.append((b.id, b.name, b.input))
    u = msg.usage
    read, write = u.cache_read_input_tokens, u.cache_creation_input_tokens
    return Seen(
        text="".join(texts),
        thinking=join_text(thoughts),
        calls=calls,
        blocks=blocks,
        usage={
            "prompt": u.input_tokens + (read or 0) + (write or 0),
            "cached": read,
            "cache_write": write,
            "output": u.output_tokens,
        },
    )


# -- follow-up requests: the assistant turn the real client sent back ---------------------------

_RESPONSES_TURN = {"reasoning", "function_call", "web_search_call", "message"}


def assistant_turn(api: str, body: dict[str, Any], calls: list[str] | None = None) -> list[Any] | None:
    """The last assistant turn of a request body as the parts nodwyn represents, in order: chat
    ``[message]``; Responses the reasoning, assistant message and function_call items of the last
    group; Anthropic the last assistant message's thinking, redacted_thinking, text and tool_use
    blocks. None when the request carries no assistant turn. With ``calls`` (the reply's call ids),
    the chat turn is the one carrying the first of them (a client may add turns of its own after it)."""
    if api == "openai-chat":
        said = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant"]
        for m in said if calls else []:
            if calls and any(c.get("id") == calls[0] for c in m.get("tool_calls") or []):
                return [m]
        return [said[-1]] if said else None
    if api == "anthropic":
        said = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant"]
        if not said:
            return None
        content = said[-1].get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        kinds = {"thinking", "redacted_thinking", "text", "tool_use"}
        return [b for b in blocks if isinstance(b, dict) and b.get("type") in kinds]
    items = [it for it in body.get("input") or [] if isinstance(it, dict)]
    end = len(items)
    while end and not _is_turn_item(items[end - 1]):
        end -= 1
    start = end
    while start and _is_turn_item(items[start - 1]):
        start -= 1
    group = [it for it in items[start:end] if it.get("type", "message") != "web_search_call"]
    return group or None


def _is_turn_item(it: dict[str, Any]) -> bool:
    kind = it.get("type", "message")
    return kind in _RESPONSES_TURN and (kind != "message" or it.get("role") == "assistant")


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict) and "text" in p)


def comparable(api: str, turn: list[Any], *, nodwyn: bool) -> list[Any]:
    """The parts of an assistant turn the issue asks to match (reasoning and thinking blocks
    byte for byte, tool-call ids, names and arguments, text), as plain values."""
    out: list[Any] = []
    if api == "openai-chat":
        (m,) = turn
        calls = [
            (c.get("id"), c["function"]["name"], _args(c["function"]["arguments"]))
            for c in m.get("tool_calls") or []
        ]
        out.append({"text": _text_of(m.get("content")), "calls": calls})
        for key in ("reasoning", "reasoning_content"):
            if m.get(key):
                out.append({"thinking": (key, m[key])})
        if m.get("reasoning_details") is not None:
            out.append({"reasoning_details": m["reasoning_details"]})
        return out
    if api == "anthropic":
        for b in turn:
            if b["type"] == "tool_use":
                out.append(("tool_use", b["id"], b["name"], b["input"]))
            elif b["type"] == "thinking":
                out.append(("thinking", b["thinking"], b["signature"]))
            elif b["type"] == "redacted_thinking":
                out.append(("redacted_thinking", b["data"]))
            elif b["text"]:
                out.append(("text", b["text"]))
        if not nodwyn:  # nodwyn sends one text block: the reply's text blocks joined
            merged: list[Any] = []
            for part in out:
                if part[0] == "text" and merged and merged[-1][0] == "text":
                    merged[-1] = ("text", merged[-1][1] + part[1])
                else:
                    merged.append(part)
            out = merged
        return out
    for it in turn:
        kind = it.get("type", "message")
        if kind == "reasoning":
            out.append(("reasoning", it.get("id"), it.get("encrypted_content")))
        elif kind == "function_call":
            out.append(("function_call", it.get("call_id"), it.get("name"), _args(it.get("arguments", ""))))
        else:
            out.append(("message", _text_of(it.get("content")), it.get("phase")))
    return out


def as_the_server_gave(api: str, parts: list[Any], oracle: Seen) -> tuple[list[Any], list[str]]:
    """The real client's turn, with each text, call id and block it did not send back as the
    server gave it (as the official SDK read the reply) replaced by the server's, and a note for
    each: what nodwyn must send is what the server gave (a client that rewrote quotes, split
    ``<think>`` tags out of the text, or sent an item id as the call id changed the recording)."""
    notes: list[str] = []
    ids = iter([c[0] for c in oracle.calls])
    blocks = iter(oracle.blocks)

    def text(t: str) -> str:
        if t != oracle.text:
            notes.append("text")
            return oracle.text
        return t

    def call_id(i: Any) -> Any:
        want = next(ids, i)
        if i != want:
            notes.append("call id")
        return want

    out: list[Any] = []
    if api == "openai-chat":
        for p in parts:
            if "text" in p:
                out.append({"text": text(p["text"]), "calls": [(call_id(c[0]), *c[1:]) for c in p["calls"]]})
            elif "thinking" in p:
                key, said = p["thinking"]
                if said != oracle.thinking:
                    notes.append("thinking text")
                out.append({"thinking": (key, oracle.thinking)})
            else:
                if p["reasoning_details"] != oracle.blocks:
                    notes.append("reasoning_details")
                out.append({"reasoning_details": oracle.blocks})
        return out, notes
    for p in parts:
        kind = p[0]
        if kind in ("text", "message"):
            out.append((kind, text(p[1]), *p[2:]))
        elif kind in ("tool_use", "function_call"):
            out.append((kind, call_id(p[1]), *p[2:]))
        else:
            b = next(blocks, None)
            gave = tuple(v for k, v in (b or {}).items() if k != "type")
            if b is not None and p[1:] != gave:
                notes.append(kind)
                p = (kind, *gave)
            out.append(p)
    return out, notes


# -- follow-up requests: where nodwyn's shape differs from the client's, and why that is equal -----

_EASY = "openai-python `types/responses/easy_input_message_param.py`"
# Each difference of shape between nodwyn's follow-up and the real client's that the API reference
# makes equivalent, with that reference (docs/recorded-traffic.md lists them; ADR 0311). A
# difference not listed here fails the follow-up test.
EQUIVALENT: dict[str, str] = {
    "responses message: no id": f"`EasyInputMessageParam` ({_EASY}) has no `id`; with `store: false` "
    "nothing is looked up by id",
    "responses message: no status": f"`EasyInputMessageParam` ({_EASY}) has no `status`",
    "responses message: content as a string (client: output_text parts)": "`EasyInputMessageParam.content`"
    f" is `str | ResponseInputMessageContentListParam` ({_EASY})",
    "responses function_call: no id": "`ResponseFunctionToolCallParam.id` is optional "
    "(`response_function_tool_call_param.py`); an `fc_` id whose reasoning item is not sent is refused "
    "(wire-formats.md §3, cline/cline#12242), so nodwyn never sends one",
    "responses reasoning: status kept (client: none)": "`ResponseReasoningItemParam.status` is optional "
    "(`response_reasoning_item_param.py`); nodwyn gives the item back as `output_item.done` gave it",
    "responses reasoning: no encrypted_content (client: null)": "`ResponseReasoningItemParam."
    "encrypted_content` is `Optional[str]`: null and absent say the same",
    "anthropic text: the reply's text blocks as one (client: as they came)": "`TextBlockParam`s of one "
    "assistant message are read as their concatenation (the model sees one turn's text); nodwyn's "
    "neutral reply keeps its text as one string (`values.request.Response.text`)",
    "openai-chat assistant: content null (client: none)": "`ChatCompletionAssistantMessageParam.content` is "
    '`Optional[...]`, "required unless `tool_calls` or `function_call` is specified" '
    "(openai-python `types/chat/chat_completion_assistant_message_param.py`)",
}
# Fields whose values the follow-up test compares itself (text, calls, thinking, blocks).
_COMPARED = {"content", "tool_calls", "reasoning", "reasoning_content", "reasoning_details", "role", "type"}


def empty_lists(value: Any, where: str = "") -> list[str]:
    """Where a value holds an empty ``content`` list (never sent: issue 20)."""
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "content" and v == []:
                found.append(f"{where}.{k}")
            found += empty_lists(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += empty_lists(v, f"{where}[{i}]")
    return found


def shape_differences(api: str, ours: list[Any], theirs: list[Any]) -> list[str]:
    """The differences of shape (fields sent or not, a content's form) between nodwyn's assistant
    turn and the client's, named as ``EQUIVALENT`` names them."""
    out: list[str] = []
    if api == "openai-chat":
        (mine,), (client,) = ours, theirs
        if "content" in mine and mine["content"] is None and "content" not in client:
            out.append("openai-chat assistant: content null (client: none)")
        out += [f"openai-chat assistant: {k} (client: none)" for k in set(mine) - set(client) - _COMPARED]
        out += [f"openai-chat assistant: no {k}" for k in set(client) - set(mine) - _COMPARED]
        return out
    if api == "anthropic":
        merged: list[Any] = []
        for b in theirs:  # nodwyn keeps a reply's text as one string: its text blocks go as one
            if b.get("type") == "text" and merged and merged[-1].get("type") == "text":
                merged[-1] = {**merged[-1], "text": merged[-1]["text"] + b["text"]}
            else:
                merged.append(b)
        if len(merged) != len(theirs):
            out.append("anthropic text: the reply's text blocks as one (client: as they came)")
        for mine, client in zip(ours, merged, strict=True):
            extra = set(mine) ^ set(client)
            out += [f"anthropic {mine.get('type')}: field {k} differs" for k in sorted(extra)]
        return out
    for mine, client in zip(ours, theirs, strict=False):
        kind = mine.get("type", "message")
        for k in sorted(set(client) - set(mine)):
            if k == "encrypted_content" and client[k] is None:
                out.append(f"responses {kind}: no encrypted_content (client: null)")
            elif k not in ("type", "role"):
                out.append(f"responses {kind}: no {k}")
        for k in sorted(set(mine) - set(client) - {"type", "role"}):
            out.append(f"responses {kind}: {k} kept (client: none)")
        if (
            kind == "message"
            and isinstance(mine.get("content"), str)
            and isinstance(client.get("content"), list)
        ):
            out.append("responses message: content as a string (client: output_text parts)")
    return out
