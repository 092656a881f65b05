"""``nodwyn verify SESSION``: a sealed session's events checked against its seal (ADR 0336).

``replay --all`` proves each request can be rebuilt from the log; only the seal, a chained HMAC
keyed by the keychain's seal secret, shows the log is as it was written.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from nodwyn.cli.common import ROOT, SESSION, resolved
from nodwyn.errors import ConfigError, CorruptLogError, NotFoundError


@click.command()
@SESSION
@ROOT
def verify(session: str, root: Path | None) -> None:
    """Check SESSION's events against its seal: exit 0 when every event is sealed and unchanged,
    5 when one was changed, added, removed or reordered, 3 when the session has no seal."""
    from nodwyn.compose import keychain_where, seal_key
    from nodwyn.log import check_session

    key = seal_key(os.environ)
    if key is None:
        raise ConfigError(
            f"no seal secret in keychain {keychain_where(os.environ)}; `nodwyn keys seal` creates one "
            "(sessions created after that are sealed)"
        )
    store, sid = resolved(root, session)
    found = check_session(key, store.folder(sid), sid)
    if not found.present:
        raise NotFoundError(
            f"session {sid} has no seal (it was created without the keychain's seal secret); "
            "`nodwyn replay --all` checks only that its requests can be rebuilt"
        )
    if found.first_bad is not None:
        raise CorruptLogError(
            f"session {sid}: seq {found.first_bad} does not match its seal: the log was changed "
            f"there (an event edited, added, removed or reordered, or the log cut); {found.sealed} "
            f"of {found.events} events are sealed; restore the session from a copy you trust"
        )
    if found.sealed < found.events:
        raise CorruptLogError(
            f"session {sid}: seqs {found.sealed + 1}..{found.events} are not sealed: they were added "
            "without the seal secret (by another program, or a nodwyn without the keychain)"
        )
    click.echo(f"session {sid}: {found.events} events sealed and unchanged")
