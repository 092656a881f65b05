from nodwyn.agent.state import ResultRecord
from nodwyn.agent.strategies import hygiene_folds


def rec(seq: int, name: str, target: str | None, *, error: bool = False, whole: bool = True) -> ResultRecord:
    path = target if name.startswith("fs-") else None
    return ResultRecord(
        seq=seq, ctx="main", name=name, path=path, target=target, whole=whole, error=error, first_line="boom"
    )


def test_failed_attempts_fold_once_the_same_target_succeeds() -> None:
    records = [
        rec(5, "shell", "make test", error=True),
        rec(7, "shell", "ls"),
        rec(9, "fs-edit", "a.py", error=True),
        rec(11, "fs-edit", "a.py"),
    ]
    folds = hygiene_folds(records, folded=(), ctx="main")
    assert [f.target for f in folds] == [9]  # make test never succeeded: its failure stays
    assert folds[0].text.startswith("[failed fs-edit attempt folded (superseded at seq 11): boom")
    assert hygiene_folds(records, folded=[9], ctx="main") == []
    assert hygiene_folds(records, folded=(), ctx="sub-1") == []


def test_stale_reads_fold_after_a_whole_read_or_a_change() -> None:
    records = [
        rec(3, "fs-read", "a.py"),
        rec(4, "fs-read", "b.py", whole=False),
        rec(6, "fs-read", "b.py", whole=False),
        rec(8, "fs-edit", "a.py"),
        rec(10, "fs-read", "c.py"),
    ]
    folds = hygiene_folds(records, folded=(), ctx="main")
    assert [(f.target, f.text) for f in folds] == [
        (3, "[stale read of a.py folded (fs-edit at seq 8); recall seq 3 to see it]")
    ]
