"""mini-swe-agent v1 trajectories (``trajectory_format`` "mini-swe-agent-1", text actions).

The model writes its action as one fenced ```` ```bash ```` block in its reply, and the agent
sends the output back as a user message. We turn each action into a tool call (ADR 0031): a reply
with exactly one block (the agent's own rule) becomes an assistant message whose text is the reply
without the block and whose one ``bash`` call carries the block's command as ``{"command": ...}``;
the user message that follows is that call's result. A reply with no block or several is left as
text, and the agent's format-error message after it stays a user message, as the model saw it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nodwyn.imports.actions import text_actions
from nodwyn.imports.mini_v2 import BASH, failed
from nodwyn.imports.run import Run
from nodwyn.values.content import ToolCall

FORMAT = "mini-swe-agent-v1"
TRAJECTORY_FORMAT = "mini-swe-agent-1"

ACTION = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)


def _call(block: re.Match[str], cid: str) -> ToolCall:
    return ToolCall(id=cid, name=BASH.name, arguments=json.dumps({"command": block.group(1)}))


def load(doc: Any, where: str, name: str) -> Run:
    """The run of a trajectory (``doc``: its JSON, of ``TRAJECTORY_FORMAT``)."""
    return text_actions(
        doc, where, "messages", (name, FORMAT), action=ACTION, call=_call, failed=failed, usage=True
    )
