"""The crash test's writers, forked by a small server process rather than by the test process.

Forking, and killing, a copy of a test process grown by thousands of earlier tests (the local
model's weights mapped, browsers' and Ray's clients loaded) took about a quarter of a second a
round; a fresh process that imported only ``nodwyn.log`` forks and loses a writer in a millisecond
or two (ADR 0471). ``serve`` runs in that process: for each request (``root``, session id, seed and
the write end of the test's pipe, passed over a Unix socket) it forks a writer, answers its pid,
waits for it and answers its wait status.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
from pathlib import Path

from nodwyn.log import NO_KNOWN, Store, redact

REPO = Path(__file__).resolve().parents[2]


def writer(root: Path, sid: str, wfd: int, seed: int) -> None:
    """Open the session for writing and append notes until killed, writing ``ack SEQ I SIZE`` to
    ``wfd`` after each append returned (after ``open LAST_SEQ`` once opened)."""
    rng = random.Random(seed)
    log = Store(root).open(sid, write=True)  # fsync on: the policy under test
    os.write(wfd, b"open %d\n" % log.last_seq)
    i = 0
    while True:
        size = rng.choice([0, 50, 500, 5000, 20000])
        event = log.append_raw("note", {"pid": os.getpid(), "i": i, "pad": "p" * size})
        os.write(wfd, b"ack %d %d %d\n" % (event.seq, i, size))
        i += 1


def serve(fd: int) -> None:
    """Fork a writer per request on the socket ``fd`` until it closes."""
    sock = socket.socket(fileno=fd)
    redact({"pad": "p"}, NO_KNOWN)  # the rules compiled (on a process's first append), for every writer
    while True:
        msg, fds, _, _ = socket.recv_fds(sock, 4096, 1)
        if not msg:
            return
        root, sid, seed = msg.decode().split("\0")
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the writer never returns
            try:
                sock.close()
                writer(Path(root), sid, fds[0], int(seed))
            finally:
                os._exit(0)
        os.close(fds[0])
        sock.sendall(b"%d\n" % pid)
        _, status = os.waitpid(pid, 0)
        sock.sendall(b"%d\n" % status)


class Forks:
    """The server process and the test's end of its socket."""

    def __init__(self) -> None:
        self.sock, theirs = socket.socketpair()
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        code = "import sys; from tests.log.crash_writer import serve; serve(int(sys.argv[1]))"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, str(theirs.fileno())], pass_fds=(theirs.fileno(),), env=env
        )
        theirs.close()
        self.answers = self.sock.makefile("rb")

    def start(self, root: Path, sid: str, wfd: int, seed: int) -> int:
        """Fork a writer with ``wfd`` as its acknowledgement pipe; its pid."""
        socket.send_fds(self.sock, [f"{root}\0{sid}\0{seed}".encode()], [wfd])
        return int(self.answers.readline())

    def status(self) -> int:
        """The wait status of the writer last started (once it has ended)."""
        return int(self.answers.readline())

    def close(self) -> None:
        self.answers.close()
        self.sock.close()
        self.proc.wait(timeout=30)
