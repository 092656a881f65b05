"""nodwyn's own files, which no file tool reads or changes, whatever the approval settings (ADR 0320).

A model that may write in the workspace must not be able to point the config's ``base_url`` at
itself, trust a workspace, drop an extension file that a later session runs, or replace the
running session's log. ``Protected`` holds the real paths of nodwyn's config directory and file,
keychain, data directory (sessions, attachments) and cache (the local model's KV states), each
with what it is; any path component named ``.nodwyn`` (a workspace's extension files) is
protected too. The file tools check a location's resolved path (symlinks already followed by
``paths.locate``) before they open, list, search, create or replace anything there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from nodwyn.errors import ToolError

EXTENSION_DIR = ".nodwyn"  # a workspace's extension files (and anything else of nodwyn's there)


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    path: Path  # resolved
    what: str  # "nodwyn's keychain"


@dataclass(frozen=True, slots=True, kw_only=True)
class Protected:
    """The places no file tool touches. ``of`` resolves the paths it is given."""

    places: tuple[Place, ...] = ()

    @classmethod
    def of(cls, places: dict[str, Path]) -> Protected:
        """``{what: path}``, each path resolved now (it need not exist)."""
        return cls(places=tuple(Place(path=p.expanduser().resolve(), what=w) for w, p in places.items()))

    def what(self, workspace: Path, shown: str) -> str | None:
        """What protected place ``shown`` (relative to the resolved ``workspace``) is in, or None."""
        rel = PurePosixPath(shown)
        if EXTENSION_DIR in rel.parts:
            return f"a {EXTENSION_DIR} directory (extension files, which run as code in later sessions)"
        full = workspace / rel if shown != "." else workspace
        for place in self.places:
            if full == place.path or place.path in full.parents:
                return f"{place.what} ({place.path})"
        return None

    def contains(self, workspace: Path, shown: str) -> bool:
        return self.what(workspace, shown) is not None

    def check(self, workspace: Path, shown: str, raw: object) -> None:
        """Refuse ``shown`` (reached on the way to the path asked for, ``raw``) with one line naming
        what it is, if it is protected."""
        found = self.what(workspace, shown)
        if found is not None:
            raise ToolError(
                f"{raw}: refused, it is in {found}; the file tools never read or change nodwyn's own "
                "files, whatever [tools] approve says (change it yourself, outside the session)"
            )


NOTHING = Protected()
