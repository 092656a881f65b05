"""Workspace confinement: a tool's path names something inside the workspace, or is refused.

Every file tool works through directory file descriptors, never through a path string the kernel
resolves again later: :func:`locate` walks the path one component at a time from the workspace's
own descriptor with ``O_NOFOLLOW``, resolves each symlink itself (refusing one that leads out, and
a loop), and returns the directory that holds the final name plus that name. Everything after that
(open, stat, create, rename) is done relative to that directory with ``O_NOFOLLOW``, so a link
planted or swapped in after the check (a cloned repository's ``.NAME.nodwyn-tmp`` link, a path
replaced while the approval prompt waits) cannot lead a tool outside.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from nodwyn.agent.tools.protect import NOTHING, Protected
from nodwyn.errors import ToolError

MAX_LINKS = 40  # symlinks followed in one path (the kernel's own limit)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True, kw_only=True)
class Location:
    """A confined place: ``name`` inside the open directory ``dir_fd``; ``shown`` is its path
    relative to the workspace (symlinks resolved). ``name`` is never a symlink when it was found,
    and may not exist (``exists``) when the caller allowed that."""

    dir_fd: int
    name: str
    shown: str
    exists: bool


_KINDS = (
    (stat.S_ISREG, "file"),
    (stat.S_ISDIR, "directory"),
    (stat.S_ISFIFO, "FIFO (named pipe)"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISLNK, "symlink"),
)


def kind_of(mode: int) -> str:
    """``file``, ``directory``, or what else it is, for messages."""
    return next((kind for test, kind in _KINDS if test(mode)), "special file")


def _parts(workspace_real: Path, raw: object) -> list[str]:
    if not isinstance(raw, str) or raw == "":
        raise ToolError('path is empty; give a path relative to the workspace, e.g. "src/app.py"')
    if "\x00" in raw:
        raise ToolError(f"path {raw!r} contains a NUL byte")
    pure = PurePosixPath(raw)
    if ".." in pure.parts:
        raise ToolError(f"path {raw!r} uses '..'; paths must stay inside the workspace {workspace_real}")
    if pure.is_absolute():
        norm = Path(os.path.normpath(raw))
        if not _within(norm, workspace_real):
            raise ToolError(f"path {raw!r} is outside the workspace {workspace_real}; use a path inside it")
        return list(norm.relative_to(workspace_real).parts)
    return [p for p in pure.parts if p not in ("", ".")]


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@contextlib.contextmanager
def locate(
    workspace: Path,
    raw: object,
    *,
    must_exist: bool = True,
    make_dirs: bool = False,
    protected: Protected = NOTHING,
) -> Iterator[Location]:
    """Resolve ``raw`` inside the workspace (see the module docstring). A missing parent directory
    is made when ``make_dirs`` (after approval), else the location is reported as not existing.
    A location in ``protected`` (nodwyn's own files) is refused before anything is made there.
    Every directory opened on the way is closed when the location is left (or refused)."""
    real = workspace.resolve()
    try:
        root_fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise ToolError(f"the workspace {real} cannot be opened ({exc.strerror}); check it exists") from None
    try:
        walker = _Walker(root_fd, real, raw, must_exist=must_exist, make_dirs=make_dirs, protected=protected)
        try:
            yield walker.walk()
        finally:
            walker.close_all()
    finally:
        os.close(root_fd)


_SHOWN_NAMES = 20


def _holds(dir_fd: int, where: str) -> str:
    """What the deepest directory that does exist holds, so a wrong path can be put right at once
    (a small model that guessed ``config/server.conf`` sees ``server.conf`` at the top)."""
    try:
        names = sorted(os.listdir(dir_fd))
    except OSError:
        return "try fs-list"
    if not names:
        return f"{where} is empty"
    more = f" and {len(names) - _SHOWN_NAMES} more (fs-list shows them)" if len(names) > _SHOWN_NAMES else ""
    place = "the workspace root" if where == "." else where
    return f"{place} holds: {', '.join(names[:_SHOWN_NAMES])}{more}"


class _Walker:
    """One walk from the workspace's descriptor: the components still to resolve, the directories
    opened so far from the root (with their names), and the symlinks followed."""

    def __init__(
        self,
        root_fd: int,
        real: Path,
        raw: object,
        *,
        must_exist: bool,
        make_dirs: bool,
        protected: Protected,
    ) -> None:
        self.real = real
        self.protected = protected
        self.raw = raw
        self.must_exist = must_exist
        self.make_dirs = make_dirs
        self.pending = _parts(real, raw)
        self.stack: list[tuple[int, str]] = [(root_fd, "")]  # open directories from the root
        self.links = 0

    def close_all(self) -> None:
        for fd, _ in self.stack[1:]:
            os.close(fd)

    def shown(self, name: str) -> str:
        return "/".join([n for _, n in self.stack[1:]] + ([name] if name not in ("", ".") else [])) or "."

    def at(self, name: str, *, exists: bool) -> Location:
        shown = self.shown(name)
        self.protected.check(self.real, shown, self.raw)
        return Location(dir_fd=self.stack[-1][0], name=name, shown=shown, exists=exists)

    def walk(self) -> Location:
        while self.pending:
            comp = self.pending.pop(0)
            if comp in ("", "."):
                continue
            if comp == "..":
                self.climb()
                continue
            cur = self.stack[-1][0]
            st = self.stat(cur, comp)
            if st is None:  # the rest does not exist yet: nothing in it can be a link
                return self.at("/".join([comp, *self.pending]), exists=False)
            if stat.S_ISLNK(st.st_mode):
                self.follow(cur, comp)
                continue
            if not self.pending:
                return self.at(comp, exists=True)
            self.descend(cur, comp, st)
        # the path was the workspace itself (or resolved to it)
        return self.at(".", exists=True)

    def climb(self) -> None:
        """A '..' (only a symlink's target brings these): back to the parent, never above the root."""
        if len(self.stack) == 1:
            raise ToolError(f"path {self.raw!r} leads outside the workspace (a symlink climbs out); refused")
        os.close(self.stack.pop()[0])

    def stat(self, cur: int, comp: str) -> os.stat_result | None:
        """The component's status, its directory made first when it is missing and that is allowed;
        None when it (and so the rest of the path) does not exist yet and that is allowed. A
        protected component is refused here, before its status, contents or absence show."""
        self.protected.check(self.real, self.shown(comp), self.raw)
        try:
            return os.stat(comp, dir_fd=cur, follow_symlinks=False)
        except FileNotFoundError:
            pass
        if self.pending and self.make_dirs:
            os.mkdir(comp, 0o777, dir_fd=cur)
            return os.stat(comp, dir_fd=cur, follow_symlinks=False)
        if self.must_exist:
            raise ToolError(
                f"{self.raw}: no such file or directory in the workspace; {_holds(cur, self.shown(''))}"
            )
        return None

    def follow(self, cur: int, comp: str) -> None:
        """Put a symlink's target before the rest; an absolute one restarts from the workspace root."""
        self.links += 1
        if self.links > MAX_LINKS:
            raise ToolError(
                f"path {self.raw!r}: too many levels of symbolic links (a symlink loop); "
                "fix or remove the link"
            )
        target = os.readlink(comp, dir_fd=cur)
        if not target.startswith("/"):
            self.pending = [p for p in target.split("/") if p] + self.pending
            return
        absolute = Path(os.path.normpath(target))
        if not _within(absolute, self.real):
            raise ToolError(f"path {self.raw!r} leads outside the workspace (a symlink to {target}); refused")
        self.close_all()
        del self.stack[1:]
        self.pending = list(absolute.relative_to(self.real).parts) + self.pending

    def descend(self, cur: int, comp: str, st: os.stat_result) -> None:
        if not stat.S_ISDIR(st.st_mode):
            raise ToolError(f"{self.raw}: {self.shown(comp)} is a {kind_of(st.st_mode)}, not a directory")
        try:
            fd = os.open(comp, DIR_FLAGS, dir_fd=cur)
        except OSError as exc:
            raise _changed(self.raw, exc) from None
        self.stack.append((fd, comp))


def _changed(raw: object, exc: OSError) -> ToolError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return ToolError(f"path {raw!r} changed while it was being opened (now a symlink); refused")
    return ToolError(f"{raw}: {exc.strerror}")


def open_entry(loc: Location, raw: object) -> tuple[int, os.stat_result]:
    """Open the located entry for reading without following a link and without blocking (a FIFO
    would otherwise wait for a writer forever); refuse anything but a file or directory."""
    try:
        fd = os.open(loc.name, _READ_FLAGS, dir_fd=loc.dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing
            raise ToolError(
                f"{loc.shown} is a socket; the file tools read files and directories only"
            ) from None
        raise _changed(raw, exc) from None
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            raise ToolError(
                f"{loc.shown} is a {kind_of(st.st_mode)}; the file tools read files and directories only"
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


_TMP_STEM = 180  # bytes of the name kept in the temporary one: ".<stem>.<16 hex>.nodwyn-tmp" fits NAME_MAX


def _tmp_name(name: str) -> str:
    """A random temporary name beside ``name``, at most 209 bytes whatever ``name`` is (a name of
    252 bytes of multi-byte characters must not make one longer than the 255 a name may have)."""
    stem = os.fsencode(name)[:_TMP_STEM].decode("utf-8", errors="ignore")
    return f".{stem}.{secrets.token_hex(8)}.nodwyn-tmp"


def write_entry(loc: Location, data: bytes) -> None:
    """Replace (or create) the located file atomically: a temporary file with a random name made
    exclusively in the same directory (``O_CREAT|O_EXCL|O_NOFOLLOW``), then a rename relative to
    that directory. A planted link at any name is never written through. A failure names the
    path asked for, never the temporary file."""
    try:
        _write_entry(loc, data)
    except OSError as exc:
        hint = "; use a shorter name" if exc.errno == errno.ENAMETOOLONG else ""
        raise ToolError(
            f"{loc.shown}: cannot write it ({exc.strerror or type(exc).__name__}){hint}"
        ) from None


def _write_entry(loc: Location, data: bytes) -> None:
    if "/" in loc.name or loc.name in (".", ""):  # only a single name, located with make_dirs
        raise ToolError(f"{loc.shown}: cannot write here; give a file path")
    try:
        old: os.stat_result | None = os.stat(loc.name, dir_fd=loc.dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if old is not None and not stat.S_ISREG(old.st_mode):
        raise ToolError(f"{loc.shown} is a {kind_of(old.st_mode)}; give a file path")
    for _ in range(8):
        tmp = _tmp_name(loc.name)
        try:
            fd = os.open(tmp, _CREATE_FLAGS, 0o666, dir_fd=loc.dir_fd)
            break
        except FileExistsError:
            continue
    else:
        raise ToolError(f"{loc.shown}: could not make a temporary file beside it; try again")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if old is not None:
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, loc.name, src_dir_fd=loc.dir_fd, dst_dir_fd=loc.dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=loc.dir_fd)
        raise
