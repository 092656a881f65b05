"""Running ``nodwyn`` in-process on a test store, as a person would from a shell."""

from __future__ import annotations

from typing import AnyStr

import pytest

from nodwyn.cli import main
from nodwyn.log import Store


def run(store: Store, capture: pytest.CaptureFixture[AnyStr], *args: str) -> tuple[int, AnyStr, AnyStr]:
    """``nodwyn ARGS --root STORE``: (exit code, stdout, stderr)."""
    try:
        main([*args, "--root", str(store.root)])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capture.readouterr()
    return code, out, err
