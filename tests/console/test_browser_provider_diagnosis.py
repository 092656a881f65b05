"""The console shows the provider's own cache diagnosis beside ours and marks a disagreement
(ADR 0312): a session recorded by ``nodwyn chat`` against the Anthropic fake with
``cache_diagnostics``, whose model switch moves our prefix while the provider's cache held."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nodwyn.cli.stats import describe
from nodwyn.fakes import FakeServer
from nodwyn.log import Store
from nodwyn.replay.diagnose import diagnose_session
from nodwyn.stats.totals import Aggregator
from nodwyn.testing import isolated_env

from .served import Served

pytestmark = pytest.mark.browser
NODWYN = str(Path(sys.executable).parent / "nodwyn")


def test_the_page_words_the_providers_reason_and_marks_a_disagreement(
    root: Path, tmp_path: Path, console: Served, page: Any
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = isolated_env(tmp_path, NODWYN_HOME=str(root), PATH=os.environ.get("PATH", ""))
    with FakeServer(
        api="anthropic", script=[{"text": "Hi."}, {"text": "Again."}, {"text": "Third."}]
    ) as fake:
        entry = f'api = "anthropic"\nmodel = "fake-model"\nbase_url = "{fake.url}"\ncontext_size = 32000\n'
        entry += "cache_diagnostics = true\n"
        Path(env["NODWYN_CONFIG"]).write_text(
            f'[control]\nmodel = "a"\n\n[models.a]\n{entry}\n[models.b]\n{entry}'
        )
        chat = subprocess.run(
            [NODWYN, "chat"],
            input="hello\nagain\n/model b\nthird\n/quit\n",
            env=env,
            capture_output=True,
            text=True,
            cwd=ws,
            timeout=120,
        )
    assert chat.returncode == 0, chat.stderr
    store = Store(root)
    (sid,) = store.ids()
    with store.open(sid) as log:
        agg = Aggregator()
        agg.feed_all(log.read())
        words = {x.seq: describe(x) for x in diagnose_session(log, agg.rows)}
    page.goto(f"{console.url}/s/{sid}")
    page.wait_for_selector("body[data-diagnosed]", timeout=20000)
    flagged = page.locator("#diagnosis li.diag.disagrees")
    assert flagged.count() == 1
    seq = int(flagged.get_attribute("data-seq") or 0)
    text = flagged.locator("span").last.inner_text()
    assert text == words[seq] and "provider: no divergence; DISAGREES with the provider" in text
    assert "the provider disagrees on 1" in page.locator("#diagnosis-summary").inner_text()
