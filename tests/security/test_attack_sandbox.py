"""The shell's OS sandbox under attack (issue 23; issue 21 item 16). Every case runs a real command
under bubblewrap through the shell tool, with the sandbox ``compose.confinement.sandbox_for``
makes from a person's environment (so the hidden paths are the real ones), and checks the host
afterwards: nothing written outside the workspace, nothing secret read, no connection made,
nothing left running. Two cases run the real ``nodwyn run --yes`` against a fake provider."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodwyn.agent.sandbox import Sandbox
from nodwyn.agent.tools import Outcome, ToolContext, builtin_tools, run_call
from nodwyn.agent.tools.procs import ProcessGroups
from nodwyn.compose.config import load_config
from nodwyn.compose.confinement import sandbox_for
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.testing import isolated_env
from nodwyn.transport.credentials import write_keychain
from nodwyn.values.content import ToolCall
from nodwyn.values.events import SESSION_START, TOOL_RESULT, SessionStart, ToolResult, decode

pytestmark = [pytest.mark.attack("sandbox"), pytest.mark.needs("bwrap")]  # but where a test says needs()

NODWYN = str(Path(sys.executable).parent / "nodwyn")
KEY = "kc-sandbox-secret-value-0001"
SSH = "-----BEGIN OPENSSH PRIVATE KEY-----\nsandbox-ssh-secret-0002\n"


class Machine:
    """A person's machine under ``tmp``: HOME with ``~/.ssh``, config.toml, a keychain, sessions,
    a workspace with ``.git``, a folder beside it (``tmp/outside``) and one outside ``/tmp``
    (``far``, under /var/tmp: the sandbox's /tmp is its own, so only there does a write meet the
    read-only root itself), each holding ``target.txt``."""

    def __init__(self, tmp: Path, extra: str = "") -> None:
        self.tmp = tmp
        self.ws = tmp / "ws"
        self.outside = tmp / "outside"
        self.far = Path(tempfile.mkdtemp(prefix="nodwyn-sandbox-", dir="/var/tmp"))
        (self.far / "target.txt").write_text("original\n")
        for d in (
            self.ws / ".git",
            self.outside,
            tmp / ".ssh",
            tmp / "home" / "sessions",
            tmp / "cfg" / "nodwyn",
        ):
            d.mkdir(parents=True, exist_ok=True)
        (self.ws / ".git" / "config").write_text("[core]\n\tbare = false\n")
        (self.outside / "target.txt").write_text("original\n")
        (tmp / ".ssh" / "id_ed25519").write_text(SSH)
        (tmp / "home" / "sessions" / "note.txt").write_text("a session's log\n")
        (tmp / "cfg" / "nodwyn" / "trusted.json").write_text('["/somewhere"]\n')
        (tmp / "config.toml").write_text(f"[tools]\nshell_timeout = 20\n{extra}\n")
        write_keychain(tmp / "keychain.json", {"corp": {"value": KEY, "origins": ["https://example.com"]}})
        self.env = isolated_env(tmp, PATH=os.environ.get("PATH", ""))
        self.sandbox = sandbox_for(self.env, load_config(self.env))

    def ctx(self, sandbox: Sandbox | None = None) -> ToolContext:
        return ToolContext(
            workspace=self.ws,
            read_budget_tokens=10_000,
            approve=lambda tool, what: True,
            shell_timeout=20,
            env={"PATH": os.environ.get("PATH", ""), "HOME": str(self.tmp)},
            processes=ProcessGroups(),
            sandbox=self.sandbox if sandbox is None else sandbox,
        )

    def sh(self, command: str, sandbox: Sandbox | None = None) -> Outcome:
        call = ToolCall(id="s1", name="shell", arguments=json.dumps({"command": command}))
        return run_call(call, builtin_tools(), self.ctx(sandbox))


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[Machine]:
    m = Machine(tmp_path)
    # its program is None without bwrap: the tests that run it are needs("bwrap")
    assert m.sandbox.mode == "workspace-write"
    yield m
    shutil.rmtree(m.far)


def _untouched(m: Machine) -> None:
    for folder in (m.outside, m.far):
        assert sorted(p.name for p in folder.iterdir()) == ["target.txt"]
        assert (folder / "target.txt").read_text() == "original\n"


# -- writes outside the workspace ------------------------------------------------------------------


def test_write_by_absolute_path(machine: Machine) -> None:
    out = machine.sh(
        f"echo x > {machine.far}/abs.txt; echo x >> {machine.far}/target.txt; "
        f"echo x > {machine.outside}/abs.txt"
    )
    assert out.error and out.sandbox == "workspace-write" and "Read-only file system" in out.text
    _untouched(machine)


def test_write_through_dotdot(machine: Machine) -> None:
    out = machine.sh("echo x > ../outside/dotdot.txt; cd .. && echo x > outside/target.txt")
    assert out.error
    _untouched(machine)


def test_write_through_a_symlink_in_the_workspace(machine: Machine) -> None:
    (machine.ws / "link").symlink_to(machine.far)
    (machine.ws / "flink").symlink_to(machine.far / "target.txt")
    (machine.ws / "near").symlink_to(machine.outside)
    out = machine.sh("echo x > link/sym.txt; echo x >> flink; echo x > near/sym.txt")
    assert out.error
    _untouched(machine)


def test_write_through_a_hard_link_made_in_the_command(machine: Machine) -> None:
    out = machine.sh(f"ln {machine.far}/target.txt hard && echo x >> hard")
    assert out.error and "cross-device" in out.text
    _untouched(machine)


def test_a_parent_swapped_for_a_symlink_mid_command(machine: Machine) -> None:
    """A folder the command writes into is replaced by a link out while it writes (the race a
    path check loses): the kernel's mounts decide, not a check made before."""
    command = (
        "mkdir d; (for i in $(seq 200); do rm -rf d; ln -sfn "
        f"{machine.far} d; rm -f d; mkdir -p d; done) & "
        "for i in $(seq 200); do echo x > d/swapped.txt 2>/dev/null; done; wait; true"
    )
    machine.sh(command)
    _untouched(machine)


def test_writes_to_the_workspace_git_config(machine: Machine) -> None:
    before = (machine.ws / ".git" / "config").read_text()
    out = machine.sh(
        "echo '[core] fsmonitor = evil' >> .git/config; mkdir .git/hooks; echo x > .git/hooks/pre-commit; "
        "mv .git .git-away; rm -rf .git"
    )
    assert out.error
    assert (machine.ws / ".git" / "config").read_text() == before
    assert sorted(p.name for p in (machine.ws / ".git").iterdir()) == ["config"]


def test_writes_to_an_existing_nodwyn_folder(machine: Machine) -> None:
    (machine.ws / ".nodwyn").mkdir()
    out = machine.sh("echo 'import os' > .nodwyn/zz.py")
    assert out.error
    assert list((machine.ws / ".nodwyn").iterdir()) == []


def test_creating_the_nodwyn_folder(machine: Machine) -> None:
    """A workspace without ``.nodwyn``: the command cannot make one (and none is left behind)."""
    out = machine.sh("mkdir -p .nodwyn; echo 'import os' > .nodwyn/zz.py; mv .nodwyn n2; ls -a")
    assert "Read-only file system" in out.text
    assert not (machine.ws / ".nodwyn").exists() and not (machine.ws / "n2").exists()


def test_read_only_mode_writes_nothing_in_the_workspace(machine: Machine) -> None:
    box = Sandbox(mode="read-only", hidden=machine.sandbox.hidden, program=machine.sandbox.program)
    (machine.ws / "readme.txt").write_text("the workspace is readable\n")
    out = machine.sh("cat readme.txt; echo x > new.txt; echo y > /tmp/scratch && cat /tmp/scratch", box)
    assert out.sandbox == "read-only" and "the workspace is readable" in out.text and "\ny\n" in out.text
    assert not (machine.ws / "new.txt").exists()


# -- the network -----------------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    """A TCP listener on 127.0.0.1 the test starts; the list collects every connection it gets."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)
    got: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            got.append(conn)
            conn.close()

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1], got
    stop.set()
    t.join()
    srv.close()


def test_a_loopback_listener(machine: Machine, listener: tuple[int, list[object]]) -> None:
    port, got = listener
    out = machine.sh(
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\""
    )
    assert out.error and "network = true" in out.text  # the result says the network is off, and how
    assert got == []


def test_dev_tcp(machine: Machine, listener: tuple[int, list[object]]) -> None:
    port, got = listener
    out = machine.sh(f"bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'")
    assert out.error
    assert got == []


def test_an_http_server_on_loopback(machine: Machine) -> None:
    """A server on 127.0.0.1 as the console or a fake provider is: no request reaches it."""
    with FakeServer(api="openai-chat", script=[{"text": "never"}]) as fake:
        out = machine.sh(
            f"python3 -c \"import urllib.request; urllib.request.urlopen('{fake.url}/models', timeout=2)\""
        )
        assert out.error
        assert fake.requests == []


def test_dns(machine: Machine) -> None:
    out = machine.sh("python3 -c \"import socket; print(socket.getaddrinfo('example.com', 443))\"")
    assert out.error and "gaierror" in out.text


def test_a_unix_socket(machine: Machine) -> None:
    """A filesystem socket the sandbox can see (in the workspace) is reachable across network
    namespaces; the seccomp filter refuses the socket itself."""
    path = machine.ws / "agent.sock"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    srv.listen()
    srv.settimeout(0.5)
    try:
        out = machine.sh(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('agent.sock')\""
        )
        assert out.error and "Operation not permitted" in out.text
        with pytest.raises(TimeoutError):
            srv.accept()
    finally:
        srv.close()


def test_an_abstract_unix_socket(machine: Machine) -> None:
    srv = socket.socket(socket.AF_UNIX)
    srv.bind("\0nodwyn-sandbox-test")
    srv.listen()
    srv.settimeout(0.5)
    try:
        out = machine.sh(
            'python3 -c "import socket; s = socket.socket(socket.AF_UNIX); '
            "s.connect('\\0nodwyn-sandbox-test')\""
        )
        assert out.error
        with pytest.raises(TimeoutError):
            srv.accept()
    finally:
        srv.close()


# -- reading what is secret ------------------------------------------------------------------------


def test_reading_the_keychain(machine: Machine) -> None:
    out = machine.sh(f"cat {machine.tmp}/keychain.json; grep -r {KEY} {machine.tmp} 2>/dev/null")
    assert KEY not in out.text


def test_reading_ssh_keys(machine: Machine) -> None:
    out = machine.sh("cat ~/.ssh/id_*; ls -a ~/.ssh")
    assert "sandbox-ssh-secret" not in out.text and "id_ed25519" not in out.text


def test_reading_nodwyns_config_and_data(machine: Machine) -> None:
    out = machine.sh(
        f"cat {machine.tmp}/config.toml {machine.tmp}/cfg/nodwyn/trusted.json; ls {machine.tmp}/home/sessions"
    )
    assert "shell_timeout" not in out.text and "somewhere" not in out.text and "note.txt" not in out.text


def test_seeing_host_processes(machine: Machine) -> None:
    marker = subprocess.Popen(["sleep", "41.2345"])
    try:
        out = machine.sh(f"cat /proc/*/cmdline | tr '\\0' ' '; ls /proc/{os.getpid()}/ 2>&1")
        assert "41.2345" not in out.text
        assert "No such file" in out.text  # the agent's own process is not there
    finally:
        marker.kill()
        marker.wait()


# -- what outlives the call ------------------------------------------------------------------------


def _alive(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    return found.stdout.split()


@pytest.mark.parametrize(
    "command",
    [
        "setsid sleep 51.4159 > /dev/null 2>&1 < /dev/null & echo started",
        "(sh -c 'sleep 51.4159 &' &) ; echo started",
        "nohup setsid sh -c 'trap \"\" TERM HUP; sleep 51.4159' > /dev/null 2>&1 & echo started",
    ],
    ids=["setsid", "double-fork", "nohup-setsid-ignoring-signals"],
)
def test_a_child_surviving_the_call(machine: Machine, command: str) -> None:
    out = machine.sh(command)
    assert "started" in out.text
    end = time.monotonic() + 2
    while _alive("51.4159") and time.monotonic() < end:
        time.sleep(0.05)
    assert _alive("51.4159") == []


# -- privileges ------------------------------------------------------------------------------------


def test_setuid_binaries_gain_nothing(machine: Machine) -> None:
    found = subprocess.run(
        ["find", "/usr/bin", "/bin", "-perm", "-4000", "-type", "f"],
        capture_output=True,
        text=True,
        check=False,
    )
    setuid = [line for line in found.stdout.split() if line]
    probe = "grep -E 'NoNewPrivs|CapEff' /proc/self/status; mount -t tmpfs none /mnt; echo mount=$?"
    if setuid:
        probe += f"; {setuid[0]} --help > /dev/null 2>&1; true"
    out = machine.sh(probe)
    assert "NoNewPrivs:\t1" in out.text and "CapEff:\t0000000000000000" in out.text
    assert "mount=0" not in out.text


def test_a_new_user_namespace_to_remount(machine: Machine) -> None:
    out = machine.sh("unshare -Urm sh -c 'umount /tmp && echo unmounted'")
    assert "unmounted" not in out.text


def test_ptrace_of_the_agent(machine: Machine) -> None:
    code = (
        "import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
        f"r = libc.ptrace(16, {os.getpid()}, 0, 0); print('ptrace', r, ctypes.get_errno())"
    )
    out = machine.sh(f'python3 -c "{code}"')
    assert "ptrace -1 3" in out.text  # ESRCH: the agent is not in the sandbox's PID namespace


def test_io_uring_and_other_abis(machine: Machine) -> None:
    """io_uring would create sockets around the seccomp filter; x32 numbers would skip it."""
    code = (
        "import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
        "print('uring', libc.syscall(425, 4, 0), ctypes.get_errno()); "
        "print('x32', libc.syscall(0x40000000 + 41, 1, 1, 0), ctypes.get_errno())"
    )
    out = machine.sh(f'python3 -c "{code}"')
    assert "uring -1 1" in out.text and "x32 -1 1" in out.text


# -- never silently unsandboxed --------------------------------------------------------------------


@pytest.mark.needs()  # runs without bwrap: that is what it checks
def test_without_bwrap_nothing_runs(machine: Machine) -> None:
    box = Sandbox(program=None, hidden=machine.sandbox.hidden)
    out = machine.sh("touch ran.txt", box)
    assert out.error and "install bubblewrap" in out.text and 'sandbox = "off"' in out.text
    assert len(out.text.splitlines()) == 1
    assert not (machine.ws / "ran.txt").exists()


@pytest.mark.needs()  # runs without bwrap: that is what it checks
def test_a_bwrap_that_cannot_make_namespaces(machine: Machine, tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    out = machine.sh("touch ran.txt", Sandbox(program=str(fake)))
    assert out.error and "user namespaces" in out.text and len(out.text.splitlines()) == 1
    assert not (machine.ws / "ran.txt").exists()


def test_a_workspace_path_with_a_newline(tmp_path: Path) -> None:
    m = Machine(tmp_path / "a\nb")
    shutil.rmtree(m.far)
    out = m.sh("touch ran.txt")
    assert out.error and "control character" in out.text and len(out.text.splitlines()) == 1
    assert not (m.ws / "ran.txt").exists()


# -- through the CLI -------------------------------------------------------------------------------


def _cli(
    tmp: Path, script: list[dict[str, object]], *args: str
) -> tuple[subprocess.CompletedProcess[str], FakeServer]:
    m = Machine(tmp)
    shutil.rmtree(m.far)
    with FakeServer(api="openai-chat", script=script) as fake:
        Path(m.env["NODWYN_CONFIG"]).write_text(
            f'[control]\nmodel = "chat"\n[tools]\nshell_timeout = 20\n[models.chat]\napi = "openai-chat"\n'
            f'model = "fake-model"\nbase_url = "{fake.url}"\ncontext_size = 32000\n'
        )
        done = subprocess.run(
            [NODWYN, "run", "Tidy up.", *args],
            env=m.env,
            cwd=m.ws,
            capture_output=True,
            text=True,
            timeout=120,
        )
    return done, fake


def test_nodwyn_run_yes_stays_in_the_workspace(tmp_path: Path) -> None:
    """The issue's report: `nodwyn run --yes` with a model whose call was `touch ../outside.txt;
    curl …`. The file is not made, the network does not answer, and the log says where it ran."""
    with FakeServer(api="openai-chat", script=[{"text": "never"}]) as target:
        command = (
            f"touch ../outside.txt; python3 -c \"import urllib.request as u; u.urlopen('{target.url}')\""
        )
        script: list[dict[str, object]] = [
            {"calls": [{"name": "shell", "id": "s1", "arguments": {"command": command}}]},
            {"text": "Done."},
        ]
        done, fake = _cli(tmp_path, script, "--yes")
        assert target.requests == []
    assert done.returncode == 0, done.stderr
    assert "sandbox workspace-write, no network" in done.stderr
    assert not (tmp_path / "outside.txt").exists()
    store = Store(tmp_path / "home")
    (sid,) = store.ids()
    with store.open(sid) as log:
        events = list(log.read())
    start = decode(events[0])
    assert (
        isinstance(start, SessionStart)
        and start.sandbox == "workspace-write"
        and start.approval == "full-auto"
    )
    results = [decode(e) for e in events if e.kind == TOOL_RESULT]
    assert [r.sandbox for r in results if isinstance(r, ToolResult)] == ["workspace-write"]
    sent = json.dumps(fake.requests[-1].body)
    assert "no network" in sent and "network = true" in sent  # the model was told why
    assert events[0].kind == SESSION_START


@pytest.mark.needs()  # runs without bwrap: that is what it checks
def test_full_auto_without_a_sandbox_is_refused(tmp_path: Path) -> None:
    done, fake = _cli(tmp_path, [{"text": "never"}], "--yes", "--sandbox", "off")
    assert done.returncode == 2 and "--dangerously-no-sandbox" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert fake.requests == []


@pytest.mark.needs()  # runs without bwrap: that is what it checks
def test_nodwyn_run_without_bwrap_says_so_before_the_first_request(tmp_path: Path) -> None:
    """No bwrap on PATH: one notice with the fix before the first request, and the command the
    model asks for does not run (no unsandboxed fallback)."""
    script: list[dict[str, object]] = [
        {"calls": [{"name": "shell", "id": "s1", "arguments": {"command": "touch ran.txt"}}]},
        {"text": "Done."},
    ]
    m = Machine(tmp_path)
    shutil.rmtree(m.far)
    with FakeServer(api="openai-chat", script=script) as fake:
        Path(m.env["NODWYN_CONFIG"]).write_text(
            f'[control]\nmodel = "chat"\n[models.chat]\napi = "openai-chat"\n'
            f'model = "fake-model"\nbase_url = "{fake.url}"\ncontext_size = 32000\n'
        )
        done = subprocess.run(
            [NODWYN, "run", "Make a file.", "--yes"],
            env={**m.env, "PATH": str(tmp_path / "no-bin")},
            cwd=m.ws,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    notice = done.stderr.index("install bubblewrap")
    assert notice < done.stderr.index("[request")
    assert not (m.ws / "ran.txt").exists()
    sent = json.dumps(fake.requests[-1].body)
    assert "install bubblewrap" in sent  # the model was told too, in one line


def test_secrets_in_a_workspace_that_is_home(machine: Machine) -> None:
    """The workspace is HOME itself (bound writable), so only the hiding keeps the keychain,
    ``~/.ssh``, config.toml, the trust list and the sessions out of sight (the private /tmp does
    not: they are inside the workspace)."""
    from dataclasses import replace

    ctx = replace(machine.ctx(), workspace=machine.tmp)
    call = ToolCall(
        id="s1",
        name="shell",
        arguments=json.dumps(
            {
                "command": "cat keychain.json .ssh/id_ed25519 config.toml cfg/nodwyn/trusted.json; "
                "ls -a .ssh home/sessions; echo x > keychain.json; cat ws/.git/config"
            }
        ),
    )
    out = run_call(call, builtin_tools(), ctx)
    assert "bare = false" in out.text  # the rest of HOME is there
    for secret in (KEY, "sandbox-ssh-secret", "shell_timeout", "somewhere", "note.txt"):
        assert secret not in out.text
    assert "id_ed25519" not in out.text.splitlines()  # not listed (only named in cat's error)
    assert KEY in (machine.tmp / "keychain.json").read_text()
