"""The saved KV states of the local model (transport.local_store): the longest saved prefix of a
prompt wins, a state of another GGUF is never used, a state written by one process is read by
another, and the size bound removes the least recently used and says so."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from nodwyn.transport.local_store import KvStore, prefix_digest

MODEL = "sha256:abc"


def aged(path: Path, seconds_ago: float) -> None:
    t = time.time() - seconds_ago
    os.utime(path, (t, t))


def test_the_longest_saved_prefix_wins_and_another_model_is_never_used(tmp_path: Path) -> None:
    store = KvStore(tmp_path)
    prompt = list(range(100))
    short = store.prefix_path(prefix_digest(MODEL, 4096, prompt[:10]))
    store.put(short, MODEL, 4096, prompt[:10], b"s" * 10)
    longer = store.prefix_path(prefix_digest(MODEL, 4096, prompt[:40]))
    store.put(longer, MODEL, 4096, prompt[:40], b"l" * 40)
    other = store.session_path("k" * 64)
    store.put(other, MODEL, 4096, [*prompt[:20], 999, 998], b"o" * 5)
    saved, why = store.best(prompt, MODEL, 4096, session_key=None)
    assert saved is not None and saved.path == longer and saved.kind == "shared prefix" and why == ""
    assert store.read(saved) == b"l" * 40
    # another GGUF, or the same at another context size: not a state for this prompt
    assert store.best(prompt, "sha256:def", 4096, session_key=None) == (
        None,
        f"the 3 saved state(s) in {tmp_path} were made by another GGUF or context size",
    )
    assert store.best(prompt, MODEL, 8192, session_key=None)[0] is None
    # a prompt that starts differently: nothing shared
    assert store.best([7, 7, 7], MODEL, 4096, session_key=None)[0] is None
    # a damaged file is no state
    (tmp_path / "s-broken.kv").write_bytes(b"nodwyn-kv-2\n{not json")
    assert store.best(prompt, MODEL, 4096, session_key=None)[0] == saved


def test_a_session_prefers_its_own_state_at_equal_length(tmp_path: Path) -> None:
    store = KvStore(tmp_path)
    tokens = list(range(30))
    store.put(store.prefix_path(prefix_digest(MODEL, 4096, tokens)), MODEL, 4096, tokens, b"p")
    own = store.session_path("a" * 64)
    store.put(own, MODEL, 4096, tokens, b"o")
    saved, _ = store.best([*tokens, 31], MODEL, 4096, session_key="a" * 64)
    assert saved is not None and saved.path == own and saved.kind == "session"


def test_the_size_bound_removes_the_least_recently_used_and_names_them(tmp_path: Path) -> None:
    store = KvStore(tmp_path, limit_bytes=3000)
    paths = []
    for n in range(3):
        p = store.session_path(f"{n}" * 64)
        assert store.put(p, MODEL, 4096, [n], b"x" * 900) == []
        aged(p, 100 - n * 10)  # 0 is the oldest
        paths.append(p)
    first = store.header(paths[0])
    assert first is not None and store.read(first) == b"x" * 900  # reading 0 makes it the newest
    removed = store.put(store.session_path("3" * 64), MODEL, 4096, [3], b"x" * 900)
    assert removed == [f"{paths[1].name} (0 MiB)"]
    assert paths[0].exists() and not paths[1].exists() and paths[2].exists()


def test_a_state_written_by_one_process_is_read_by_another(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path\n"
        "from nodwyn.transport.local_store import KvStore, prefix_digest\n"
        "s = KvStore(Path(sys.argv[1])); t = list(range(50))\n"
        "s.put(s.prefix_path(prefix_digest('sha256:abc', 4096, t)), 'sha256:abc', 4096, t, b'state' * 100)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=60)
    saved, _ = KvStore(tmp_path).best([*range(50), 7], MODEL, 4096, session_key="z" * 64)
    assert saved is not None and saved.tokens == tuple(range(50))
    assert KvStore(tmp_path).read(saved) == b"state" * 100
    assert not list(tmp_path.glob("*.tmp"))  # written under another name and renamed
