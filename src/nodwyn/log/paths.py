"""Where nodwyn keeps its data. The environment is passed in; nothing here reads it by itself."""

from __future__ import annotations

import errno
from collections.abc import Mapping
from pathlib import Path

from nodwyn.errors import ConfigError, StorageError


def data_root(env: Mapping[str, str]) -> Path:
    """``NODWYN_HOME``, else ``$XDG_DATA_HOME/nodwyn``, else ``~/.local/share/nodwyn`` (``HOME`` from env)."""
    home = env.get("NODWYN_HOME")
    if home:
        return Path(home)
    xdg = env.get("XDG_DATA_HOME")
    if xdg and Path(xdg).is_absolute():  # the XDG spec says to ignore a relative value
        return Path(xdg) / "nodwyn"
    user_home = env.get("HOME")
    if not user_home:
        raise ConfigError("no data directory: set NODWYN_HOME (or XDG_DATA_HOME or HOME) in the environment")
    return Path(user_home) / ".local" / "share" / "nodwyn"


def sessions_dir(root: Path) -> Path:
    """The folder holding one folder per session."""
    return root / "sessions"


def storage_error(exc: OSError, what: str) -> StorageError:
    """``exc`` as one line: what failed, the file, the system's reason, and what to do about it."""
    where = f" ({exc.filename})" if exc.filename else ""
    reason = exc.strerror or type(exc).__name__
    code = exc.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        fix = "free some space on that disk and run again"
    elif code == errno.EFBIG:
        fix = "the file hit the size limit (ulimit -f); raise it and run again"
    elif code == errno.EROFS:
        fix = "the file system is read-only; set NODWYN_HOME to a writable folder"
    elif code in (errno.EACCES, errno.EPERM):
        fix = "give your user read and write access to it, or set NODWYN_HOME to a folder you own"
    elif code in (errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
        fix = "a file stands where a folder must be; move it away or set NODWYN_HOME to a folder"
    else:
        fix = "check the disk and NODWYN_HOME"
    return StorageError(f"{what}: {reason}{where}; {fix}")
