"""SWE-agent 1.x trajectories (``*.traj``, XML function-call actions).

``history`` is the unprocessed message log: the system prompt, the task (a user message), then the
model's replies (``role`` assistant, ``message_type`` action) each followed by its observation (a
user message). The per-step ``trajectory[i].messages`` hold what the agent actually sent after its
history processors (observation masking); we replay our own policies over the unprocessed history
instead (ADR 0031). A reply's ``<function=NAME>`` block with its ``<parameter=KEY>VALUE</parameter>``
lines becomes one tool call (arguments: the parameters as a JSON object, in order) and the
observation after it that call's result; the reply's text is the rest. A reply without a block
stays text and the observation after it a user message. The functions are described in the
system prompt, so the catalog is empty.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from nodwyn.imports.actions import text_actions
from nodwyn.imports.jsonfile import read_json
from nodwyn.imports.run import Run
from nodwyn.values.content import ToolCall

FORMAT = "swe-agent"

FUNCTION = re.compile(r"<function=([\w.-]+)>(.*?)</function>", re.DOTALL)
PARAMETER = re.compile(r"<parameter=([\w.-]+)>(.*?)</parameter>", re.DOTALL)


def _call(block: re.Match[str], cid: str) -> ToolCall:
    args = {key: value.strip("\n") for key, value in PARAMETER.findall(block.group(2))}
    return ToolCall(id=cid, name=block.group(1), arguments=json.dumps(args))


def load(path: Path, name: str) -> Run:
    run = (name, FORMAT)
    return text_actions(
        read_json(path), str(path), "history", run, action=FUNCTION, call=_call, back=("user", "tool")
    )
