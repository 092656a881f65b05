"""Serving the console with uvicorn, on a loopback address unless told otherwise.

The socket is bound here, before anything is printed: a port another program holds is one line
and exit 2, and the URL printed is the one served. The Host check stays on for every interface
(ADR 0141): names other than loopback are served only when given with ``--allow-host``, or, on a
wildcard interface, the machine's own name.
"""

from __future__ import annotations

import errno
import ipaddress
import socket

from nodwyn.errors import ConfigError

WILDCARDS = frozenset({"0.0.0.0", "::", "[::]", ""})


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_host(host: str, *, allow_remote: bool) -> None:
    """Refuse a non-loopback interface unless ``allow_remote``: the console has no login."""
    if not is_loopback(host) and not allow_remote:
        raise ConfigError(
            f"console host {host!r} is not a loopback address and the console has no login; "
            "use 127.0.0.1, or pass --allow-remote to serve every session on that interface"
        )


def allowed_hosts(host: str, extra: tuple[str, ...] = ()) -> list[str]:
    """The Host header values served besides loopback: the bound address itself (when it is one
    address), the names given, and on a wildcard interface the machine's own names."""
    names: list[str] = [h.lower() for h in extra]
    bare = host.strip("[]").lower()
    if bare in WILDCARDS or host in WILDCARDS:
        names += [socket.gethostname().lower(), socket.getfqdn().lower()]
    elif not is_loopback(host):
        names.append(bare)
    return [n for i, n in enumerate(names) if n and n not in names[:i]]


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or a one-line ConfigError saying why not."""
    bare = host.strip("[]")
    try:
        infos = socket.getaddrinfo(bare or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(
            f"console host {host!r} cannot be resolved ({exc.strerror}); pass an address"
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"console port {port} on {host} is already in use by another program; "
                "pick another with --port (0 picks a free one) or stop that program"
            ) from None
        raise ConfigError(
            f"console cannot listen on {host}:{port} ({exc.strerror}); pick another --host or --port"
        ) from None
    sock.set_inheritable(True)
    return sock
