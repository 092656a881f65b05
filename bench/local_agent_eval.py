"""A local agent evaluation: small tasks in fixture workspaces, run on the in-process models and
scored by a check on the result (the answer holds the right fact, the right file changed, a test
passes), never by reading the model's words by eye.

Each task is a fresh session in a fresh copy of its workspace (writes and commands approved, as
with ``--yes``), one turn, at most ``--max-steps`` requests. All tasks of a model run in one
process, so the KV cache left by one task serves the system prompt and tool list of the next, as
it would for a person starting sessions one after another; ``cold`` says how many prompt tokens a
task had to prefill. Every session is replayed from its log (each request digest-verified).

    .venv/bin/python bench/local_agent_eval.py [--models local,local-tiny] [--tasks NAME,...]

``--realistic`` runs the realistic set instead (issue 25, item 6): the multi-step tasks of
``bench/tasks/realistic/tasks.toml``, each a fixture workspace graded by running code in it, as a
``nodwyn eval`` grid (issue 27): this writes SPEC.toml from those tasks and ``--variants``, runs
``nodwyn eval SPEC.toml --workers N`` in a data folder of its own (``--home``), and prints the
eval's table and, from the same sessions' logs, each task's prefill time:

    .venv/bin/python bench/local_agent_eval.py --realistic --runs 3 --variants v19=window-v19,v20=window-v20
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodwyn.compose.setup import open_agent
from nodwyn.replay.exact import verify_all
from nodwyn.transport.local import LocalBackend, cores


@dataclass(frozen=True)
class Outcome:
    answer: str
    workspace: Path
    calls: list[str]  # the tools called, in order


Check = Callable[[Outcome], bool]


@dataclass(frozen=True)
class Task:
    name: str
    kind: str
    prompt: str
    files: dict[str, str]
    check: Check
    expect: str  # what the check looks for, for the table
    options: dict[str, Any] = field(default_factory=dict)


def says(*facts: str) -> Check:
    """The answer holds every fact (case-insensitive)."""
    return lambda o: all(f.lower() in o.answer.lower() for f in facts)


def python_ok(code: str) -> Check:
    """A Python snippet run in the workspace exits 0 (the fix works)."""

    def check(o: Outcome) -> bool:
        run = subprocess.run(
            [sys.executable, "-c", code], cwd=o.workspace, capture_output=True, timeout=30, check=False
        )
        return run.returncode == 0

    return check


def file_is(path: str, want: Callable[[str], bool]) -> Check:
    def check(o: Outcome) -> bool:
        p = o.workspace / path
        return p.is_file() and want(p.read_text())

    return check


def no_tools_and(check: Check) -> Check:
    return lambda o: not o.calls and check(o)


TASKS = [
    Task(
        name="explain-file",
        kind="read a file and say what it does",
        prompt="What does temp.py do? Answer in one sentence.",
        files={"temp.py": "def convert(c):\n    return c * 9 / 5 + 32\n\n\nprint(convert(float(input())))\n"},
        check=says("fahrenheit"),
        expect='answer says "Fahrenheit"',
    ),
    Task(
        name="read-setting",
        kind="read a file and report a fact",
        prompt="Which port does server.conf set?",
        files={"server.conf": "# server settings\nhost = 0.0.0.0\nport = 8731\nworkers = 4\n"},
        check=says("8731"),
        expect='answer says "8731"',
    ),
    Task(
        name="find-definition",
        kind="find where a name is defined",
        prompt="In which file is the function parse_header defined?",
        files={
            "app.py": "from net.proto import parse_header\n\nprint(parse_header(b'x'))\n",
            "net/__init__.py": "",
            "net/proto.py": "def parse_header(data):\n    return data[:4]\n",
            "net/util.py": "def checksum(data):\n    return sum(data) % 256\n",
        },
        check=says("proto.py"),
        expect='answer names "net/proto.py"',
    ),
    Task(
        name="list-files",
        kind="list files",
        prompt="List the files in the docs directory.",
        files={
            "docs/intro.md": "# Intro\n",
            "docs/usage.md": "# Usage\n",
            "docs/faq.md": "# FAQ\n",
            "x.py": "",
        },
        check=says("intro.md", "usage.md", "faq.md"),
        expect="answer names the three files",
    ),
    Task(
        name="find-todo",
        kind="search the files",
        prompt="Which file has a TODO comment?",
        files={
            "main.py": "import worker\n\nworker.run()\n",
            "worker.py": "def run():\n    # TODO: retry on failure\n    print('working')\n",
            "config.py": "RETRIES = 3\n",
        },
        check=says("worker.py"),
        expect='answer names "worker.py"',
    ),
    Task(
        name="run-command",
        kind="run a command and report its output",
        prompt="Run python3 count.py and tell me the number it prints.",
        files={"count.py": "print(sum(range(1, 92)) + 31)\n"},
        check=says("4217"),
        expect='answer says "4217"',
    ),
    Task(
        name="count-lines",
        kind="run a command and report its output",
        prompt="How many lines does data.csv have? Use wc -l.",
        files={"data.csv": "".join(f"{i},{i * i}\n" for i in range(17))},
        check=says("17"),
        expect='answer says "17"',
    ),
    Task(
        name="fix-off-by-one",
        kind="fix an off-by-one with fs-edit",
        prompt="last() in items.py fails with an IndexError. Fix the bug with fs-edit.",
        files={"items.py": "def last(items):\n    return items[len(items)]\n"},
        check=python_ok("from items import last; assert last([1, 2, 3]) == 3"),
        expect="last([1, 2, 3]) == 3",
    ),
    Task(
        name="fix-failing-test",
        kind="make a test pass",
        prompt="The test in test_mathx.py fails. Fix the bug in mathx.py, not the test.",
        files={
            "mathx.py": "def square(x):\n    return x * 2\n",
            "test_mathx.py": "from mathx import square\n\n\ndef test_square():\n    assert square(3) == 9\n",
        },
        check=python_ok("import test_mathx; test_mathx.test_square()"),
        expect="test_square passes",
    ),
    Task(
        name="add-line",
        kind="add a line to a file",
        prompt="Add the line timeout = 30 at the end of settings.ini.",
        files={"settings.ini": "[net]\nhost = example.org\nretries = 2\n"},
        check=file_is(
            "settings.ini",
            lambda t: (
                t.startswith("[net]\nhost = example.org\nretries = 2\n")
                and t.strip().splitlines()[-1].strip() == "timeout = 30"
            ),
        ),
        expect="last line is timeout = 30, the rest kept",
    ),
    Task(
        name="create-file",
        kind="write a file",
        prompt="Create a file hello.txt that contains exactly: hi there",
        files={"README.md": "An empty project.\n"},
        check=file_is("hello.txt", lambda t: t.strip() == "hi there"),
        expect='hello.txt holds "hi there"',
    ),
    Task(
        name="version-value",
        kind="two steps: find, then read",
        prompt="Which file defines VERSION, and what is its value?",
        files={
            "setup.py": "from pkg.meta import VERSION\n\nprint(VERSION)\n",
            "pkg/__init__.py": "",
            "pkg/meta.py": 'NAME = "demo"\nVERSION = "3.14.1"\n',
        },
        check=says("meta.py", "3.14.1"),
        expect='answer says "pkg/meta.py" and "3.14.1"',
    ),
    Task(
        name="rename-function",
        kind="two steps: read, then edit",
        prompt="Rename the function helo to hello in greet.py.",
        files={"greet.py": "def helo(name):\n    return f'Hello, {name}!'\n"},
        check=python_ok("from greet import hello; assert hello('a') == 'Hello, a!'"),
        expect="greet.hello works",
    ),
    Task(
        name="say-done",
        kind='say "done" without calling tools',
        prompt="Do not use any tools. Just reply with the word done.",
        files={"README.md": "A project.\n"},
        check=no_tools_and(says("done")),
        expect='"done", no tool called',
    ),
]


@dataclass
class Row:
    model: str
    task: str
    solved: bool
    requests: int
    prompt_tokens: int
    cold_tokens: int
    output_tokens: int
    prefill_ms: float
    wall_s: float
    calls: list[str]
    answer: str
    stopped: str | None
    replayed: int


def show(events: list[Any]) -> None:
    """Each reply as the model wrote it and each tool result, for reading why a task failed."""
    for e in events:
        if e.kind == "llm.resp":
            r = e.data["response"]
            print(f"    reply: {(r.get('raw') or r.get('text') or '')!r} calls={r.get('calls')}", flush=True)
        elif e.kind == "tool.result":
            print(f"    result {e.data['name']}: {str(e.data.get('text', e.data))[:300]!r}", flush=True)


def run_task(
    task: Task, model: str, backend: LocalBackend, tmp: Path, max_steps: int, verbose: bool = False
) -> Row:
    ws = tmp / f"{model}-{task.name}" / "ws"
    for rel, text in task.files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    home = ws.parent
    (home / "config.toml").write_text(f'[control]\nmodel = "{model}"\n')
    env = {
        "NODWYN_HOME": str(home / "data"),
        "NODWYN_CONFIG": str(home / "config.toml"),
        "XDG_CONFIG_HOME": str(home / "cfg"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "HOME": str(home),
    }
    opened = open_agent(env=env, workspace=ws, yes=True, backend_for=lambda s: backend)
    agent = opened.agent
    agent.settings = dataclasses.replace(agent.settings, max_steps=max_steps)
    started = time.perf_counter()
    try:
        result = agent.user_turn(task.prompt)
    finally:
        wall = time.perf_counter() - started
    events = list(agent.log.read(1))
    verdicts = list(verify_all(agent.log))
    bad = [v for v in verdicts if v.error is not None]
    if bad:
        raise SystemExit(f"{model} {task.name}: request seq {bad[0].seq} does not replay: {bad[0].error}")
    replayed = len(verdicts)
    if verbose:
        show(events)
    opened.close()
    resps = [e.data["response"] for e in events if e.kind == "llm.resp"]
    calls = [e.data["name"] for e in events if e.kind == "tool.result"]
    answer = result.text
    solved = task.check(Outcome(answer=answer, workspace=ws, calls=calls))
    return Row(
        model=model,
        task=task.name,
        solved=solved,
        requests=len(resps),
        prompt_tokens=sum(r["usage"]["prompt_tokens"] for r in resps),
        cold_tokens=sum(r["usage"]["prompt_tokens"] - r["usage"]["cached_tokens"] for r in resps),
        output_tokens=sum(r["usage"]["output_tokens"] for r in resps),
        prefill_ms=sum(r["timings"]["prefill_ms"] for r in resps),
        wall_s=wall,
        calls=calls,
        answer=answer,
        stopped=result.stopped,
        replayed=replayed,
    )


def table(rows: list[Row]) -> str:
    lines = [
        "| model | task | solved | requests | prompt tok | prefilled tok | output tok | prefill s | wall s "
        "| tools called |",
        "|---|---|:---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.model} | {r.task} | {'yes' if r.solved else 'no'} | {r.requests} | {r.prompt_tokens:,} | "
            f"{r.cold_tokens:,} | {r.output_tokens:,} | {r.prefill_ms / 1000:.1f} | {r.wall_s:.1f} | "
            f"{', '.join(r.calls) or '-'}{' (' + r.stopped + ')' if r.stopped else ''} |"
        )
    return "\n".join(lines)


def totals(rows: list[Row]) -> str:
    out = [
        "| model | solved | requests | prompt tok | prefilled tok | output tok | prefill s | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for model in dict.fromkeys(r.model for r in rows):
        mine = [r for r in rows if r.model == model]
        out.append(
            f"| {model} | {sum(r.solved for r in mine)} / {len(mine)} | {sum(r.requests for r in mine)} | "
            f"{sum(r.prompt_tokens for r in mine):,} | {sum(r.cold_tokens for r in mine):,} | "
            f"{sum(r.output_tokens for r in mine):,} | {sum(r.prefill_ms for r in mine) / 1000:.1f} | "
            f"{sum(r.wall_s for r in mine):.1f} |"
        )
    return "\n".join(out)


REALISTIC = Path(__file__).parent / "tasks" / "realistic"
# `local` with its edits in the call's JSON (as before ADR 0440), for item 3's measurement
JSON_ENTRY = """[models.local-json]
api = "local"
model = "qwen2.5-coder-1.5b-instruct-q4_k_m"
context_size = 8192
edits = "json"
"""


def realistic_spec(
    runs: int, variants: list[tuple[str, str | None, str]], timeout: int, only: str = ""
) -> str:
    """SPEC.toml for the realistic set: its [[task]] tables (workspaces made absolute; ``only``:
    the tasks named, comma-separated) and a [[variant]] per ``(NAME, RECIPE, MODEL)`` (no recipe:
    the default)."""
    import tomllib

    tasks = tomllib.loads((REALISTIC / "tasks.toml").read_text())["task"]
    wanted = {n for n in only.split(",") if n}
    unknown = wanted - {t["name"] for t in tasks}
    if unknown:
        raise SystemExit(f"--tasks: no realistic task {', '.join(sorted(unknown))}")
    tasks = [t for t in tasks if not wanted or t["name"] in wanted]
    out = [f"runs = {runs}", 'order = "balanced"', ""]
    for t in tasks:
        out += [
            "[[task]]",
            f"name = {json.dumps(t['name'])}",
            f"workspace = {json.dumps(str((REALISTIC / t['workspace']).resolve()))}",
            f"prompt = {json.dumps(t['prompt'])}",
            f"check = {json.dumps(t['check'])}",
            f"timeout = {timeout}",
            "",
        ]
    for name, recipe, model in variants:
        out += ["[[variant]]", f"name = {json.dumps(name)}", f"model = {json.dumps(model)}"]
        out += [f"recipe = {json.dumps(recipe)}"] if recipe else []
        out.append("")
    return "\n".join(out)


def log_figures(home: Path, session: str) -> tuple[int, int, float]:
    """A session's prompt tokens, prefilled (uncached) tokens and prefill seconds, from its log."""
    prompt = prefilled = 0
    ms = 0.0
    for line in (home / "sessions" / session / "log.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e.get("kind") == "llm.resp":
            r = e["data"]["response"]
            prompt += r["usage"]["prompt_tokens"]
            prefilled += r["usage"]["prompt_tokens"] - r["usage"]["cached_tokens"]
            ms += (r.get("timings") or {}).get("prefill_ms") or 0.0
    return prompt, prefilled, ms / 1000


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def realistic_table(doc: dict[str, Any], data: Path) -> str:
    """Per variant and task (then per variant): solved k / n and each run's verdict, and the means
    of wall time, requests, prompt and prefilled tokens and prefill time over its runs."""
    rows = doc["runs"]
    lines = [
        "| variant | task | solved | runs | wall s | requests | prompt tok | prefilled tok | prefill s |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    keys = list(dict.fromkeys((r["variant"], r["task"]) for r in rows))
    keys += [(v, None) for v in dict.fromkeys(v for v, _ in keys)]
    for variant, task in keys:
        mine = sorted(
            (r for r in rows if r["variant"] == variant and task in (None, r["task"])),
            key=lambda r: (r["task"], r["run"]),
        )
        logs = [log_figures(data, r["session"]) for r in mine if r.get("session")]
        verdicts = " ".join("Y" if r["solved"] else "n" for r in mine) if task else ""
        lines.append(
            f"| {variant} | {task or '(all)'} | {sum(r['solved'] for r in mine)} / {len(mine)} | "
            f"{verdicts} | "
            f"{_mean([r['wall_s'] for r in mine if r.get('wall_s') is not None]):.1f} | "
            f"{_mean([r['requests'] for r in mine if r.get('requests') is not None]):.1f} | "
            f"{_mean([p for p, _, _ in logs]):,.0f} | {_mean([c for _, c, _ in logs]):,.0f} | "
            f"{_mean([t for _, _, t in logs]):.1f} |"
        )
    return "\n".join(lines)


def run_realistic(args: argparse.Namespace) -> None:
    model = args.models.split(",")[0]
    variants: list[tuple[str, str | None, str]] = []
    for item in args.variants.split(","):
        item, _, entry = item.partition("@")
        name, _, recipe = item.partition("=")
        variants.append((name, recipe or None, entry or model))
    home = args.home.resolve()
    home.mkdir(parents=True, exist_ok=True)
    spec = home / "spec.toml"
    spec.write_text(realistic_spec(args.runs, variants, args.timeout, args.tasks))
    config = home / "config.toml"
    config.write_text(f'[control]\nmodel = "{model}"\n\n{JSON_ENTRY}')
    env = {**os.environ, "NODWYN_HOME": str(home / "data"), "NODWYN_CONFIG": str(config)}
    nodwyn = str(Path(sys.executable).parent / "nodwyn")
    workers = ["--workers", str(args.workers)]
    cmd = [nodwyn, "eval", str(spec), *workers, "--json", *(["--resume"] if args.resume else [])]
    print(" ".join(cmd), flush=True)
    got = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, check=False)
    doc = json.loads(got.stdout)
    (home / "eval.json").write_text(json.dumps(doc, indent=1))
    print(
        subprocess.run(
            [nodwyn, "eval", "report", doc["eval"]], env=env, capture_output=True, text=True
        ).stdout
    )
    print(realistic_table(doc, home / "data"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="local,local-tiny", help="built-in local models, comma-separated")
    parser.add_argument("--tasks", default="", help="task names, comma-separated (default: all)")
    parser.add_argument("--max-steps", type=int, default=6, help="model requests per task at most")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--show", action="store_true", help="print each raw reply and tool result")
    parser.add_argument("--realistic", action="store_true", help="the realistic set, through nodwyn eval")
    parser.add_argument("--runs", type=int, default=3, help="--realistic: runs per task and variant")
    parser.add_argument(
        "--variants",
        default="default",
        help="--realistic: NAME[=window-vN][@MODEL],... (local-json: edits in JSON)",
    )
    parser.add_argument("--timeout", type=int, default=400, help="--realistic: seconds per session")
    parser.add_argument("--resume", action="store_true", help="--realistic: skip runs already recorded")
    parser.add_argument("--workers", type=int, default=1, help="--realistic: sessions at once")
    parser.add_argument(
        "--home", type=Path, default=Path("/tmp/nodwyn-realistic"), help="--realistic: data folder"
    )
    args = parser.parse_args()
    if args.realistic:
        run_realistic(args)
        return
    wanted = [t for t in args.tasks.split(",") if t]
    tasks = [t for t in TASKS if not wanted or t.name in wanted]
    rows: list[Row] = []
    backend = LocalBackend()
    print(f"{len(tasks)} tasks; {cores()} cores for llama.cpp", flush=True)
    with tempfile.TemporaryDirectory(prefix="nodwyn-eval-") as tmp:
        for model in args.models.split(","):
            backend.forget()
            for task in tasks:
                row = run_task(task, model, backend, Path(tmp), args.max_steps, args.show)
                rows.append(row)
                print(
                    f"{model:<11} {task.name:<17} {'SOLVED' if row.solved else 'failed':<7} "
                    f"{row.requests} req {row.wall_s:6.1f} s  calls={row.calls} answer={row.answer[:120]!r}",
                    flush=True,
                )
    print()
    print(totals(rows))
    print()
    print(table(rows))
    print()
    print("| task | kind | prompt | check |")
    print("|---|---|---|---|")
    for t in tasks:
        print(f"| {t.name} | {t.kind} | {t.prompt} | {t.expect} |")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows], indent=1, default=str))


if __name__ == "__main__":
    main()
