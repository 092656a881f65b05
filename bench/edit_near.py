"""Where fs-edit's "most similar lines" threshold should be (ADR 0296): the scores `near.nearest`
gives, each searched in one file of a source tree,

- ``near miss``: a region of the file (1 to 3 non-blank lines) with one word dropped or replaced by
  a word of another file, as a model that misremembers a line writes it; ``right region`` is how
  often the best window is that region;
- ``unrelated``: a region of another file of the same tree (same language, same style: the hard
  case for a threshold), as a model that invents the text writes it.

For each threshold: the share of near misses still shown (higher is better) and of unrelated texts
shown as if similar (lower is better). Deterministic for a given seed and tree. Usage:
    .venv/bin/python bench/edit_near.py --samples 300 --tree src/nodwyn
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

from nodwyn.agent.tools.deadline import Deadline
from nodwyn.agent.tools.near import THRESHOLD, nearest

WORD = re.compile(r"[A-Za-z_]+")
THRESHOLDS = (0.5, 0.6, 0.65, 0.7, 0.75, 0.8)


def region(lines: list[str], rng: random.Random) -> tuple[int, str]:
    """A random region of 1 to 3 non-blank lines (at least 8 characters); its first line's index."""
    while True:
        n = rng.choice([1, 1, 2, 3])
        i = rng.randrange(len(lines) - n)
        chosen = lines[i : i + n]
        if all(line.strip() for line in chosen) and len("".join(chosen).strip()) >= 8:
            return i, "\n".join(chosen)


def score(text: str, old: str) -> tuple[float, int]:
    near = nearest(text, old, Deadline("bench", 60.0), threshold=0.0)
    return (0.0, -1) if near is None else (near.score, near.first)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tree", type=Path, default=Path("src/nodwyn"))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    paths = sorted(p for p in args.tree.rglob("*.py") if 2000 < p.stat().st_size < 40000)
    texts = {p: p.read_text() for p in paths}
    words = sorted({w for t in texts.values() for w in WORD.findall(t)})
    near: list[float] = []
    far: list[float] = []
    right = 0
    for _ in range(args.samples):
        path = rng.choice(paths)
        text = texts[path]
        lines = text.split("\n")
        at, old = region(lines, rng)
        word = rng.choice(list(WORD.finditer(old)) or [None])
        if word is None:
            continue
        changed = old[: word.start()] + rng.choice(["", rng.choice(words)]) + old[word.end() :]
        if changed not in text:
            s, first = score(text, changed)
            near.append(s)
            right += first == at
        other = texts[rng.choice([p for p in paths if p != path])]
        invented = region(other.split("\n"), rng)[1]
        if invented not in text:
            far.append(score(text, invented)[0])
    print(f"{len(paths)} files under {args.tree}; {len(near)} near misses, {len(far)} unrelated texts")
    print(f"near misses whose best window is the changed region: {right / len(near):.0%}\n")
    print("| threshold | near misses shown | unrelated shown |")
    print("|---:|---:|---:|")
    for t in THRESHOLDS:
        mark = " (fs-edit's)" if t == THRESHOLD else ""
        kept = sum(s >= t for s in near) / len(near)
        shown = sum(s >= t for s in far) / len(far)
        print(f"| {t}{mark} | {kept:.0%} | {shown:.0%} |")


if __name__ == "__main__":
    main()
