"""Saved KV states of the in-process model, across processes: one folder, one file per state, an
LRU size bound (ADR 0370).

Two kinds of state are kept, each a file holding llama.cpp's state bytes and the tokens they cover:

* a **shared prefix** (``p-DIGEST.kv``): the tokens of a prompt's system prompt and tool list,
  saved once, named by the SHA-256 of the GGUF's identity, the context size and those tokens; every
  new session whose prompt starts with them loads it instead of prefilling them;
* a **session** (``s-KEY.kv``): the whole KV cache a session left when its process ended, for
  ``nodwyn resume``.

``best(tokens)`` names the saved state that shares the most tokens with a prompt (the longest
wins, whatever its kind). A state is used (read, written) → its file's mtime is now; when the files
pass ``limit_bytes`` the least recently used go first, and ``put`` says which it removed. Files are
written to a temporary name and renamed, so two processes never read half a state.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nodwyn.dialects import shared_prefix

MAGIC = b"nodwyn-kv-2\n"
# the folder's bound: about 20 sessions of 4,000 tokens of the 1.5B model and their prefixes
LIMIT_BYTES = 3 * 1024**3


@dataclass(frozen=True, slots=True, kw_only=True)
class Saved:
    """A saved state's header: which model made it, and the tokens its KV cache holds."""

    path: Path
    model: str  # the GGUF's identity (its SHA-256, or its name and size for a file given by path)
    n_ctx: int
    tokens: tuple[int, ...]
    n_bytes: int

    @property
    def kind(self) -> str:
        return "shared prefix" if self.path.name.startswith("p-") else "session"


def prefix_digest(model: str, n_ctx: int, tokens: Sequence[int]) -> str:
    """The name of a shared prefix: SHA-256 over the GGUF's identity, the context size and the tokens."""
    h = hashlib.sha256(f"{model}\n{n_ctx}\n".encode())
    h.update(array("i", tokens).tobytes())
    return h.hexdigest()


class KvStore:
    """The state folder. Reads never raise: a missing, damaged or foreign file is no state."""

    def __init__(self, root: Path, *, limit_bytes: int = LIMIT_BYTES) -> None:
        self.root = root
        self.limit_bytes = limit_bytes

    def session_path(self, session_key: str) -> Path:
        return self.root / f"s-{session_key[:32]}.kv"

    def prefix_path(self, digest: str) -> Path:
        return self.root / f"p-{digest[:32]}.kv"

    def header(self, path: Path) -> Saved | None:
        """A file's header and tokens (not its state bytes), or None if it is not a state."""
        try:
            with path.open("rb") as f:
                if f.read(len(MAGIC)) != MAGIC:
                    return None
                head = json.loads(f.readline())
                n_tokens = int(head["n_tokens"])
                raw = f.read(4 * n_tokens)
        except (OSError, ValueError, KeyError, TypeError):
            return None
        tokens = array("i")
        tokens.frombytes(raw[: len(raw) - len(raw) % 4])
        if len(tokens) != n_tokens:
            return None
        return Saved(
            path=path,
            model=str(head.get("model")),
            n_ctx=int(head.get("n_ctx", 0)),
            tokens=tuple(tokens),
            n_bytes=int(head.get("bytes", 0)),
        )

    def read(self, saved: Saved) -> bytes | None:
        """The state bytes of ``saved`` (None if the file changed or is short); marks it used."""
        try:
            with saved.path.open("rb") as f:
                f.read(len(MAGIC))
                f.readline()
                f.seek(4 * len(saved.tokens), os.SEEK_CUR)
                blob = f.read()
            os.utime(saved.path)
        except OSError:
            return None
        return blob if len(blob) == saved.n_bytes else None

    def states(self) -> list[Path]:
        try:
            return sorted(self.root.glob("*.kv"))
        except OSError:
            return []

    def best(
        self, tokens: Sequence[int], model: str, n_ctx: int, *, session_key: str | None
    ) -> tuple[Saved | None, str]:
        """The saved state of this model that shares the most tokens with ``tokens``, and why none
        was found when none was. This session's own state, then any other (a shared prefix, or
        another session that began the same way)."""
        found: Saved | None = None
        best_n = 0
        foreign = 0
        own = self.session_path(session_key) if session_key else None
        for path in self.states():
            saved = self.header(path)
            if saved is None:
                continue
            if saved.model != model or saved.n_ctx != n_ctx:
                foreign += 1
                continue
            n = shared_prefix(saved.tokens, tokens)
            if n > best_n or (n == best_n and n > 0 and path == own):
                found, best_n = saved, n
        if found is not None:
            return found, ""
        if foreign:
            return (
                None,
                f"the {foreign} saved state(s) in {self.root} were made by another GGUF or context size",
            )
        if own is not None and own.exists():
            return None, "this session's saved state does not match its prompt"
        return None, "no saved state for this session and no saved shared prefix of these tools on this model"

    def put(self, path: Path, model: str, n_ctx: int, tokens: Sequence[int], blob: bytes) -> list[str]:
        """Write a state (atomically) and apply the size bound; returns what the bound removed."""
        header = json.dumps({"model": model, "n_ctx": n_ctx, "n_tokens": len(tokens), "bytes": len(blob)})
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with tmp.open("wb") as f:
            f.write(MAGIC + header.encode() + b"\n")
            f.write(array("i", tokens).tobytes())
            f.write(blob)
        tmp.replace(path)
        return self.evict(keep=path)

    def evict(self, keep: Path | None = None) -> list[str]:
        """Remove the least recently used states until the folder is within its bound."""
        sized: list[tuple[float, int, Path]] = []
        for p in self.states():
            with contextlib.suppress(OSError):
                st = p.stat()
                sized.append((st.st_mtime, st.st_size, p))
        total = sum(s for _, s, _ in sized)
        removed: list[str] = []
        for _, size, p in sorted(sized):
            if total <= self.limit_bytes:
                break
            if p == keep:
                continue
            with contextlib.suppress(OSError):
                p.unlink()
                removed.append(f"{p.name} ({size / 1024**2:.0f} MiB)")
                total -= size
        return removed
