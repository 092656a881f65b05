"""Result caps: head+tail (v1), named cuts (v17), wide reads (v19), and the cap in requests."""

from __future__ import annotations

import re

from nodwyn.values.content import ToolMessage
from nodwyn.values.recipe import WindowLimits
from nodwyn.window.caps import _cap_text

from .sessions import batch, started

FILE = "".join(f"def line_{i}():  return {i}\n" for i in range(1, 401))  # 400 lines, ~11 KB


def test_a_result_within_the_cap_is_untouched() -> None:
    assert _cap_text("short\ntext\n", 100, named=True) == "short\ntext\n"


def test_plain_head_and_tail_with_an_omission_marker() -> None:
    out = _cap_text(FILE, 300, named=False)
    assert out.startswith(FILE[:400]) and out.endswith(FILE[-400:])
    assert re.search(r"\n\[\.\.\. about \d+ tokens omitted \.\.\.\]\n", out)
    assert len(out.encode()) <= 300 * 3 + 100
    assert _cap_text(FILE, 300, named=False) == out  # deterministic


def test_named_cut_of_an_fs_read_names_the_file_lines_left_out() -> None:
    out = _cap_text(FILE, 300, named=True, fs_read=True)
    hit = re.search(r"\[\.\.\. file lines (\d+)-(\d+) omitted \(about \d+ tokens\); fs-read lines \1-\2", out)
    assert hit is not None
    a, b = int(hit.group(1)), int(hit.group(2))
    head, tail = out.split(hit.group(0))
    assert head.endswith(f"return {a - 1}\n")  # whole lines, up to the line before the first omitted
    assert tail.split("\n", 1)[1].startswith(f"def line_{b + 1}()")  # and from the line after the last


def test_named_cut_of_a_ranged_read_counts_from_its_header() -> None:
    text = "[lines 101-400 of 400]\n" + "".join(FILE.splitlines(keepends=True)[100:])
    out = _cap_text(text, 300, named=True, fs_read=True)
    hit = re.search(r"file lines (\d+)-(\d+) omitted", out)
    assert hit is not None
    a = int(hit.group(1))
    head = out.split("[...")[0]
    assert head.endswith(f"return {a - 1}\n")  # the header line is not a file line


def test_named_cut_of_a_ranged_read_uses_the_recorded_range_without_a_header() -> None:
    text = "".join(FILE.splitlines(keepends=True)[199:])
    out = _cap_text(text, 300, named=True, fs_read=True, range_start=200)
    lines = re.search(r"file lines (\d+)-", out)
    assert lines is not None, out
    a = int(lines.group(1))
    assert out.split("[...")[0].endswith(f"return {a - 1}\n")


def test_named_cut_of_another_result_names_its_own_lines() -> None:
    text = "".join(f"output {i}\n" for i in range(1, 500))
    out = _cap_text(text, 200, named=True)
    hit = re.search(r"\[\.\.\. lines (\d+)-(\d+) of this result omitted", out)
    assert hit is not None
    assert out.split("[...")[0].endswith(f"output {int(hit.group(1)) - 1}\n")


def test_no_line_end_to_cut_at_keeps_the_plain_marker() -> None:
    out = _cap_text("x" * 5000, 100, named=True, fs_read=True)
    assert "tokens omitted ...]" in out and "lines" not in out


def _result_text(version: int, name: str) -> str:
    lim = WindowLimits(
        high_water=50_000, low_water=25_000, max_result_tokens=600, output_reserve=100, ceiling=60_000
    )
    sim = started(version, limits=lim)
    sim.user("read it")
    batch(sim, [("r1", FILE)], name=name)
    m = sim.request().request.messages[-1]
    assert isinstance(m, ToolMessage)
    return m.text


def test_wide_reads_show_an_fs_read_up_to_twice_the_cap_from_v19() -> None:
    assert len(_result_text(19, "fs-read").encode()) > 600 * 3 + 400  # more than one cap
    assert len(_result_text(19, "fs-read").encode()) <= 2 * 600 * 3 + 200
    assert len(_result_text(18, "fs-read").encode()) <= 600 * 3 + 200  # v18: the cap
    assert len(_result_text(19, "shell").encode()) <= 600 * 3 + 200  # other results: the cap


def test_named_cuts_from_v17_plain_before() -> None:
    assert "file lines" in _result_text(17, "fs-read")
    assert "file lines" not in _result_text(16, "fs-read") and "tokens omitted" in _result_text(16, "fs-read")
