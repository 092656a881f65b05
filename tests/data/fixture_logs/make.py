"""Write fixture logs with the release checked out: run by hand, never by the test suite.

    .venv/bin/python tests/data/fixture_logs/make.py KIND [KIND ...]    # or --list

Each kind drives the release through its public APIs (``open_agent`` and the agent loop against
the fake providers, real HTTP servers on 127.0.0.1; ``replay.summaries`` on a closed session;
``tests/replay/scripted.py`` where the agent cannot write an event) and copies the one session it
wrote, as the store lays it out, to ``KIND/sessions/ID/``, with its goldens (``golden.json``,
``transcript.txt``) from ``tests/replay/test_fixture_logs.py``. A kind whose folder exists is
refused: those logs are what an older release wrote and must never be regenerated; a new kind gets
a new folder (and a line in README.md).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))

from tests.agent.conftest import tiny_png  # noqa: E402
from tests.replay.test_fixture_logs import GOLDEN, TRANSCRIPT, snapshot  # noqa: E402

from nodwyn.agent import strategies  # noqa: E402
from nodwyn.agent.loop import Agent  # noqa: E402
from nodwyn.compose.setup import open_agent  # noqa: E402
from nodwyn.errors import ProviderError  # noqa: E402
from nodwyn.fakes import FakeApi, FakeServer  # noqa: E402
from nodwyn.log import Store  # noqa: E402
from nodwyn.replay.summaries import add_summary, revoke_summary  # noqa: E402
from nodwyn.testing import SessionBuilder, recipe  # noqa: E402
from nodwyn.values.events import CtxOpen, CtxWiden  # noqa: E402
from nodwyn.values.recipe import KNOWN_VERSIONS  # noqa: E402


def call(name: str, cid: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "id": cid, "arguments": arguments}


class Run:
    """One kind's scratch space: a workspace, a config naming the fakes, and the data root."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.workspace = tmp / "ws"
        self.workspace.mkdir()
        (self.workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        (self.workspace / "README.txt").write_text("A calculator.\n")
        self.config = tmp / "config.toml"
        self.home = tmp / "home"
        self.env = {
            "NODWYN_HOME": str(self.home),
            "NODWYN_CONFIG": str(self.config),
            "XDG_CONFIG_HOME": str(tmp / "cfg"),
            "XDG_CACHE_HOME": str(tmp / "cache"),
            "HOME": str(tmp),
        }

    def configure(self, models: str, control: str, window: str = "") -> None:
        self.config.write_text(f'[control]\nmodel = "{control}"\n{window}\n{models}')

    @contextmanager
    def agent(self, resume: str | None = None, model: str | None = None) -> Iterator[Agent]:
        opened = open_agent(env=self.env, workspace=self.workspace, resume=resume, model_name=model, yes=True)
        try:
            yield opened.agent
        finally:
            opened.close()


def entry(name: str, api: str, url: str, extra: str = "", context: int = 32000) -> str:
    return (
        f'[models.{name}]\napi = "{api}"\nmodel = "fake-model"\nbase_url = "{url}"\n'
        f"context_size = {context}\n{extra}\n"
    )


def fakes(stack: ExitStack, *servers: FakeServer) -> None:
    for s in servers:
        stack.enter_context(s)


def used_up(*servers: FakeServer) -> None:
    for s in servers:
        assert s.remaining == [], f"{s.api}: {len(s.remaining)} script items unused"


# -- one function per kind: each writes exactly one session under run.home ------------------------

TOOL_TURN: list[dict[str, Any]] = [
    {"text": "Looking.", "calls": [call("fs-list", "c1"), call("fs-read", "c2", path="calc.py")]},
    {"text": "add subtracts; it should add."},
]


def api_turns(run: Run, api: FakeApi, family: str | None, extra: str, script: list[dict[str, Any]]) -> None:
    with FakeServer(api=api, family=family, script=script) as fake:
        run.configure(entry("m", api, fake.url, extra + (f'family = "{family}"\n' if family else "")), "m")
        with run.agent() as agent:
            agent.user_turn("What does add in calc.py do?")
            agent.user_turn("Thanks. One word: is it right?")
        used_up(fake)


def openai_chat(run: Run) -> None:
    api_turns(run, "openai-chat", None, "", [*TOOL_TURN, {"text": "No."}])


def openrouter(run: Run) -> None:
    details: list[dict[str, Any]] = [
        {"type": "reasoning.text", "text": "list first, then read", "signature": None}
    ]
    script: list[dict[str, Any]] = [
        {"thinking": "list first, then read", "reasoning_details": details, **TOOL_TURN[0]},
        {"thinking": "it subtracts", "text": "add subtracts; it should add."},
        {"text": "No."},
    ]
    api_turns(
        run, "openai-chat", "openrouter", 'cache_key = "header"\nreasoning_details_only = true\n', script
    )


def deepseek(run: Run) -> None:
    script: list[dict[str, Any]] = [
        {"thinking": "I should look at the file.", **TOOL_TURN[0]},
        {"thinking": "It subtracts.", "text": "add subtracts; it should add."},
        {"text": "No."},
    ]
    api_turns(run, "openai-chat", "deepseek", 'reasoning_effort = "high"\n', script)


def cerebras(run: Run) -> None:
    script: list[dict[str, Any]] = [
        {"thinking": "Look at the file.", **TOOL_TURN[0]},
        {"thinking": "Subtracts.", "text": "add subtracts; it should add."},
        {"text": "No."},
    ]
    api_turns(run, "openai-chat", "cerebras", "", script)


def responses(run: Run) -> None:
    script: list[dict[str, Any]] = [
        {"blocks": [{"type": "reasoning", "thinking": "list, then read", "position": 0}], **TOOL_TURN[0]},
        {"blocks": [{"type": "reasoning", "thinking": "it subtracts", "position": 0}], **TOOL_TURN[1]},
        {"thinking": "short answer", "text": "No."},
    ]
    api_turns(run, "responses", None, 'keep_reasoning = true\nreasoning_effort = "low"\n', script)


def anthropic(run: Run) -> None:
    script: list[dict[str, Any]] = [
        {
            "blocks": [
                {"type": "thinking", "thinking": "List the files, then read calc.py.", "position": 0},
                {"type": "redacted_thinking", "position": 1},
            ],
            **TOOL_TURN[0],
        },
        {"blocks": [{"type": "thinking", "thinking": "a - b.", "position": 0}], **TOOL_TURN[1]},
        {"text": "No."},
    ]
    api_turns(run, "anthropic", None, 'cache_control = "ephemeral"\nreasoning_effort = "medium"\n', script)


def ollama(run: Run) -> None:
    script: list[dict[str, Any]] = [{"thinking": "Read it.", **TOOL_TURN[0]}, TOOL_TURN[1], {"text": "No."}]
    api_turns(run, "ollama", None, 'keep_alive = "30m"\n', script)


def trims(run: Run) -> None:
    """A small window: results capped, old ones elided past high water (sticky), one recalled."""
    for i in range(6):
        body = "".join(f"{i}.{n}: " + "lorem ipsum dolor sit amet " * 3 + "\n" for n in range(40))
        (run.workspace / f"part{i}.txt").write_text(body)
    script: list[dict[str, Any]] = []
    for i in range(6):
        script += [{"calls": [call("fs-read", f"r{i}", path=f"part{i}.txt")]}, {"text": f"part {i} read."}]
    script += [{"calls": [call("recall", "back", seq=5)]}, {"text": "Recalled."}]
    window = "[window]\nhigh_water = 1500\nlow_water = 700\nmax_result_tokens = 300\noutput_reserve = 256\n"
    with FakeServer(api="openai-chat", script=script) as fake:
        run.configure(entry("m", "openai-chat", fake.url, context=4096), "m", window)
        with run.agent() as agent:
            for i in range(6):
                agent.user_turn(f"Read part{i}.txt.")
            agent.user_turn("Bring back seq 5.")
        used_up(fake)


def plan(run: Run) -> None:
    """A planner request (no tools) ahead of the turn, then a plan-write call: two gate.plan events."""
    script: list[dict[str, Any]] = [
        {"text": "1. list\n2. read calc.py"},
        {"calls": [call("plan-write", "p1", plan="1. list\n2. read\n3. answer"), call("fs-list", "c1")]},
        {"text": "Done: calc.py and README.txt."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        run.configure(entry("m", "openai-chat", fake.url), "m")
        with run.agent() as agent:
            agent.user_turn("What files are here?", plan_first=True)
        used_up(fake)


def sub_agent(run: Run) -> None:
    script: list[dict[str, Any]] = [
        {"calls": [call("sub-agent", "s0", task="Read calc.py and say what add does.", tools=["fs-read"])]},
        {"calls": [call("fs-read", "s1", path="calc.py")]},
        {"text": "add returns a - b."},
        {"text": "The sub-agent says add subtracts."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        run.configure(entry("m", "openai-chat", fake.url), "m")
        with run.agent() as agent:
            agent.user_turn("Ask a sub-agent what add does.")
        used_up(fake)


def compaction(run: Run) -> None:
    """A turn, a handover note (headroom, no tools), a lasting narrowing, and turns inside it."""
    script: list[dict[str, Any]] = [
        *TOOL_TURN,
        {"text": "NOTE: add in calc.py subtracts."},
        {"text": "Go on: fix add."},
        {"text": "Ok."},
    ]
    with FakeServer(api="anthropic", script=script) as fake:
        run.configure(entry("m", "anthropic", fake.url, 'cache_control = "ephemeral"\n'), "m")
        with run.agent() as agent:
            agent.user_turn("What does add in calc.py do?")
            strategies.compact(agent)
            agent.run(agent.state.ctx)
            agent.user_turn("Anything else?")
        used_up(fake)


def folds(run: Run) -> None:
    """A failed read and a stale read (the file edited after it), folded by hygiene."""
    script: list[dict[str, Any]] = [
        {
            "calls": [
                call("fs-read", "c1", path="calc.py", lines="50-60"),
                call("fs-read", "c2", path="calc.py"),
            ]
        },
        {"calls": [call("fs-edit", "c3", path="calc.py", old="a - b", new="a + b")]},
        {"text": "Fixed."},
        {"text": "Nothing else."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        run.configure(entry("m", "openai-chat", fake.url), "m")
        with run.agent() as agent:
            agent.user_turn("Fix add in calc.py.")
            assert strategies.hygiene(agent, force=True), "no fold was made"
            agent.user_turn("Anything else?")
        used_up(fake)


def image(run: Run) -> None:
    """An image sent to a model that takes images, then withheld from one that does not."""
    shot = run.tmp / "shot.png"
    shot.write_bytes(tiny_png(4, 3))
    with ExitStack() as stack:
        a = FakeServer(api="openai-chat", script=[{"text": "A red box."}])
        b = FakeServer(api="anthropic", script=[{"text": "I cannot see it."}])
        fakes(stack, a, b)
        run.configure(
            entry("eyes", "openai-chat", a.url, "takes_images = true\n") + entry("blind", "anthropic", b.url),
            "eyes",
        )
        with run.agent() as agent:
            agent.user_turn("What is in the picture?", [shot])
            strategies.switch_model(agent, "blind")
            agent.user_turn("And you?")
        used_up(a, b)


def summaries(run: Run) -> None:
    """Three turns; on the closed session a summary added (resume, a turn), then revoked (resume, a turn)."""
    script: list[dict[str, Any]] = [
        {"calls": [call("fs-read", "c1", path="calc.py")]},
        {"text": "add subtracts."},
        {"calls": [call("fs-read", "c2", path="README.txt")]},
        {"text": "A calculator."},
        {"text": "Third done."},
        {"text": "Fourth, with the summary."},
        {"text": "Fifth, summary revoked."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        run.configure(entry("m", "openai-chat", fake.url), "m")
        with run.agent() as agent:
            sid = agent.session_id
            agent.user_turn("What does add do?")
            agent.user_turn("What is README.txt?")
            agent.user_turn("Third task.")
        store = Store(run.home)
        with store.open(sid, write=True) as log:
            users = [e.seq for e in log.read() if e.kind == "user.msg"]
            added = add_summary(log, users[0], users[1] - 1, "The person asked about add; it subtracts.")
        with run.agent(resume=sid) as agent:
            agent.user_turn("Fourth task.")
        with store.open(sid, write=True) as log:
            revoke_summary(log, added.seq)
        with run.agent(resume=sid) as agent:
            agent.user_turn("Fifth task.")
        used_up(fake)


def resume(run: Run) -> None:
    """A session resumed under a changed config: other window sizes and keep_alive, a new recipe."""
    with FakeServer(api="ollama", script=[*TOOL_TURN, {"text": "Resumed: still subtracts."}]) as fake:
        run.configure(entry("m", "ollama", fake.url, 'keep_alive = "5m"\n'), "m")
        with run.agent() as agent:
            sid = agent.session_id
            agent.user_turn("What does add in calc.py do?")
        window = "[window]\nhigh_water = 12000\nlow_water = 6000\noutput_reserve = 1024\n"
        run.configure(entry("m", "ollama", fake.url, 'keep_alive = "30m"\n'), "m", window)
        with run.agent(resume=sid) as agent:
            agent.user_turn("Still?")
        used_up(fake)


def model_switch(run: Run) -> None:
    """Anthropic with signed thinking, switched to a chat model (the blocks stay home), and back."""
    with ExitStack() as stack:
        claude = FakeServer(
            api="anthropic",
            script=[
                {"blocks": [{"type": "thinking", "thinking": "Read it.", "position": 0}], **TOOL_TURN[0]},
                TOOL_TURN[1],
                {"text": "Back: yes, it subtracts."},
            ],
        )
        chat = FakeServer(api="openai-chat", script=[{"text": "It subtracts."}])
        fakes(stack, claude, chat)
        run.configure(
            entry("claude", "anthropic", claude.url, 'cache_control = "ephemeral"\n')
            + entry("chat", "openai-chat", chat.url),
            "claude",
        )
        with run.agent() as agent:
            agent.user_turn("What does add in calc.py do?")
            strategies.switch_model(agent, "chat")
            agent.user_turn("Say it again.")
            strategies.switch_model(agent, "claude")
            agent.user_turn("And once more.")
        used_up(claude, chat)


def recipe_versions(run: Run) -> None:
    """Every recipe version the release knows, in one session resumed under each in turn, with a
    window small enough to trim (through tests/replay/scripted.py: the agent only writes the newest)."""
    small: dict[str, Any] = {
        "high_water": 700,
        "low_water": 300,
        "ceiling": 1_000,
        "max_result_tokens": 150,
        "output_reserve": 256,
    }
    versions = sorted(KNOWN_VERSIONS)
    s = SessionBuilder(store=Store(run.home), recipe=recipe(versions[0], **small))
    for n, v in enumerate(versions):
        if n:
            s.resume(recipe(v, **small))
        s.turn(f"job {n}", [[("shell", f'{{"cmd":"job {n}"}}', f"result {n} " + "z" * 300)]], f"job {n} ok")
    s.close()


def contexts(run: Run) -> None:
    """What the agent never writes but the log and window take: a narrowing that is not lasting,
    widened back (ctx.widen), and a torn tail cut by the next writer (log.repaired)."""
    store = Store(run.home)
    s = SessionBuilder(store=store, recipe=recipe())
    s.turn("first", [[("fs-read", '{"path":"a.py"}', "print('a')\n")]], "a prints a")
    s.add(CtxOpen(id="n1", kind="narrow", lasting=False, system="Only the narrow task."))
    s.turn("narrow task", [], "narrow done", ctx="n1")
    s.add(CtxWiden(id="n1"))
    s.turn("wide again", [], "wide done")
    s.close()
    with (run.home / "sessions" / s.id / "log.jsonl").open("ab") as f:
        f.write(b'{"seq":')
    s.resume(recipe())
    s.turn("after the repair", [], "ok")
    s.close()


def interrupted(run: Run) -> None:
    """A sub-agent's request refused by the provider (a note, an llm.req with no reply), the session
    resumed and settled (the sub-context closed, its call answered), an empty reply (a note)."""
    script: list[dict[str, Any]] = [
        {"calls": [call("sub-agent", "s0", task="Read calc.py.", tools=["fs-read"])]},
        {"error": {"status": 400, "message": "context too long", "type": "invalid_request_error"}},
        {"text": "The sub-agent was cut off; add subtracts."},
        {"text": ""},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        run.configure(entry("m", "openai-chat", fake.url), "m")
        with run.agent() as agent:
            sid = agent.session_id
            try:
                agent.user_turn("Ask a sub-agent what add does.")
            except ProviderError:
                pass
            else:
                raise AssertionError("the scripted provider error did not reach the loop")
        with run.agent(resume=sid) as agent:
            agent.user_turn("Go on.")
            assert agent.user_turn("Anything?").stopped == "empty reply"
        used_up(fake)


def redaction(run: Run) -> None:
    """Credentials in a person's message and in a tool result, replaced by the log's redaction (the
    ``_redaction`` report on the event) before anything is written or sent."""
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
    (run.workspace / ".env").write_text(f"OPENAI_API_KEY={key}\n")
    script: list[dict[str, Any]] = [
        {"calls": [call("fs-read", "c1", path=".env")]},
        {"text": "The key is set."},
    ]
    with FakeServer(api="openai-chat", script=script) as fake:
        run.configure(entry("m", "openai-chat", fake.url), "m")
        with run.agent() as agent:
            agent.user_turn(f"Is {key} the key in .env?")
        used_up(fake)
        assert all(key.encode() not in r.raw for r in fake.requests)


KINDS: dict[str, Callable[[Run], None]] = {
    "openai-chat": openai_chat,
    "openai-chat-openrouter": openrouter,
    "openai-chat-deepseek": deepseek,
    "openai-chat-cerebras": cerebras,
    "responses": responses,
    "anthropic": anthropic,
    "ollama": ollama,
    "trims": trims,
    "plan": plan,
    "sub-agent": sub_agent,
    "compaction": compaction,
    "folds": folds,
    "image": image,
    "summaries": summaries,
    "resume": resume,
    "model-switch": model_switch,
    "recipe-versions": recipe_versions,
    "contexts": contexts,
    "interrupted": interrupted,
    "redaction": redaction,
}


def make(kind: str) -> Path:
    out = HERE / kind
    if out.exists():
        raise SystemExit(f"{out} exists: fixture logs are never regenerated; add a new kind instead")
    with tempfile.TemporaryDirectory(prefix=f"fixture-{kind}-") as tmp:
        run = Run(Path(tmp))
        KINDS[kind](run)
        sessions = sorted((run.home / "sessions").iterdir())
        assert len(sessions) == 1, f"{kind} wrote {len(sessions)} sessions"
        ignore = shutil.ignore_patterns("lock")
        shutil.copytree(sessions[0], out / "sessions" / sessions[0].name, ignore=ignore)
    golden, text = snapshot(out)
    (out / GOLDEN).write_bytes(golden)
    (out / TRANSCRIPT).write_text(text)
    return out


def main(argv: list[str]) -> None:
    if not argv or argv == ["--list"]:
        print("\n".join(KINDS))
        return
    unknown = [k for k in argv if k not in KINDS]
    if unknown:
        raise SystemExit(f"unknown kind {unknown[0]!r}; --list shows them")
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    for kind in argv:
        out = make(kind)
        print(f"{kind}: {out.relative_to(REPO)} (release at {commit})")


if __name__ == "__main__":
    main(sys.argv[1:])
