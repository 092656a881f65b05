"""The read-only web console: sessions, totals, the per-request cache chart, exact windows and the
transcript, served on 127.0.0.1 by ``nodwyn console``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodwyn import lazy

if TYPE_CHECKING:
    from nodwyn.console.app import make_app
    from nodwyn.console.server import allowed_hosts, bind, check_host

__all__ = ["allowed_hosts", "bind", "check_host", "make_app"]

__getattr__ = lazy(__name__, {"app": "make_app", "server": "allowed_hosts bind check_host"})
