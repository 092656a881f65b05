"""fs-edit's replacement, found in the file's redacted view and made in the file itself (ADR 0322).

The model sees a file with held credentials and secret shapes replaced by ``[redacted:…]``; fs-edit
finds ``old`` (and counts it, and says which lines are like it) in that same view, so whether an
edit is found never depends on a hidden value. The file itself still holds the values: the edit is
made at the raw occurrence whose edited text has, as its view, the view edited the same way. Text
that overlaps a marker cannot be edited (the tool cannot show what it would replace).
"""

from __future__ import annotations

import io
import re
from typing import Final

from nodwyn.agent.tools import view
from nodwyn.agent.tools.deadline import Deadline
from nodwyn.errors import ToolError
from nodwyn.log import Known

_MARKER: Final = re.compile(r"\[redacted:[a-z0-9-]+\]")
_TRIES: Final = 16  # raw occurrences tried (each redacts the file once)


def _view_of(text: str, known: Known, deadline: Deadline) -> str:
    return view.text(io.BytesIO(text.encode("utf-8", errors="surrogateescape")), known, deadline)


def apply_edit(
    raw: str, seen: str, old: str, new: str, *, known: Known, deadline: Deadline, name: str
) -> str:
    """``raw`` (the file's text) with the one occurrence of ``old`` in ``seen`` (its view) replaced
    by ``new``; a ToolError when that occurrence overlaps a redacted value or has no raw twin."""
    if raw == seen:
        return raw.replace(old, new, 1)
    at = seen.index(old)
    end = at + len(old)
    if any(m.start() < end and at < m.end() for m in _MARKER.finditer(seen)):
        raise ToolError(
            f"fs-edit: the old text in {name} overlaps a redacted value, which the file tools never "
            "change; replace only the text around it (or edit the file yourself)"
        )
    expect = seen[:at] + new + seen[end:]
    q = raw.find(old)
    for _ in range(_TRIES):
        if q < 0:
            break
        candidate = raw[:q] + new + raw[q + len(old) :]
        if _view_of(candidate, known, deadline) == expect:
            return candidate
        q = raw.find(old, q + 1)
    raise ToolError(
        f"fs-edit: the edit in {name} would change how a redacted value next to it reads; "
        "include less of the text beside the [redacted:…] marker, or edit the file yourself"
    )


def loose_match(seen: str, old: str) -> str | None:
    """The one piece of ``seen`` (whole lines) that ``old`` matches once blank lines and trailing
    spaces are left out of both (a small model drops the blank lines between a constant and a
    def, ADR 0445), or None: no such piece, or more than one."""
    want = [ln.rstrip() for ln in old.split("\n") if ln.strip()]
    if not want:
        return None
    lines = seen.split("\n")
    kept = [(i, ln.rstrip()) for i, ln in enumerate(lines) if ln.strip()]
    found = [k for k in range(len(kept) - len(want) + 1) if [t for _, t in kept[k : k + len(want)]] == want]
    if len(found) != 1:
        return None
    first, last = kept[found[0]][0], kept[found[0] + len(want) - 1][0]
    piece = "\n".join(lines[first : last + 1])
    return piece if seen.count(piece) == 1 else None
