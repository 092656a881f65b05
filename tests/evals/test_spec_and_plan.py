"""An eval's SPEC.toml read into values (each fault one line) and the order of its runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodwyn.errors import ConfigError
from nodwyn.evals.plan import plan
from nodwyn.evals.spec import load_spec


def _write(tmp_path: Path, head: str = "runs = 3", variants: str = "AB", extra: str = "") -> Path:
    (tmp_path / "ws").mkdir(exist_ok=True)
    text = f'{head}\n[[task]]\nname = "t1"\nworkspace = "ws"\nprompt = "p"\ncheck = "true"\n{extra}'
    text += '[[task]]\nname = "t2"\nworkspace = "ws"\nprompt = "p"\ncheck = "true"\n'
    text += "".join(f'[[variant]]\nname = "{v}"\n' for v in variants)
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path


def test_balanced_order_is_abba_within_each_task(tmp_path: Path) -> None:
    spec = load_spec(_write(tmp_path))
    order = [(k.task, k.variant, k.run) for k in plan(spec)]
    assert [v for t, v, _ in order if t == "t1"] == ["A", "B", "B", "A", "A", "B"]
    assert order[:6] == [
        ("t1", "A", 1),
        ("t1", "B", 1),
        ("t1", "B", 2),
        ("t1", "A", 2),
        ("t1", "A", 3),
        ("t1", "B", 3),
    ]


def test_random_order_is_a_seeded_shuffle_of_the_same_grid(tmp_path: Path) -> None:
    one = plan(load_spec(_write(tmp_path, 'runs = 3\norder = "random"\nseed = 7')))
    again = plan(load_spec(_write(tmp_path, 'runs = 3\norder = "random"\nseed = 7')))
    other = plan(load_spec(_write(tmp_path, 'runs = 3\norder = "random"\nseed = 8')))
    assert one == again and one != other and sorted(one, key=str) == sorted(other, key=str)
    assert len(set(one)) == 12


def test_the_same_grid_is_the_same_eval(tmp_path: Path) -> None:
    assert load_spec(_write(tmp_path)).eval_id == load_spec(_write(tmp_path)).eval_id
    assert load_spec(_write(tmp_path)).eval_id != load_spec(_write(tmp_path, "runs = 2")).eval_id


@pytest.mark.parametrize(
    ("head", "extra", "says"),
    [
        ("runs = 0", "", "`runs` must be a whole number of at least 1"),
        ('order = "abab"', "", "`order` must be one of balanced, random"),
        ("runs = 1", "timeout = -1\n", "`timeout` must be a positive number"),
        ("runs = 1", "keep = true\n", "unknown key 'keep'"),
        ("runs = [", "", "not TOML"),
    ],
)
def test_a_bad_spec_is_one_line_naming_the_fix(tmp_path: Path, head: str, extra: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_spec(_write(tmp_path, head, extra=extra))
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_missing_workspace_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "spec.toml"
    path.write_text(
        '[[task]]\nname = "t"\nworkspace = "nope"\nprompt = "p"\ncheck = "true"\n[[variant]]\nname = "a"\n'
    )
    with pytest.raises(ConfigError, match="is not a folder"):
        load_spec(path)
