"""The agent: the turn loop (``loop.Agent``), its settings, tools, strategies and sandbox. See README.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodwyn import lazy

if TYPE_CHECKING:
    from nodwyn.agent.attach import image_size, read_image
    from nodwyn.agent.fits import check_task
    from nodwyn.agent.loop import Agent
    from nodwyn.agent.ports import Display
    from nodwyn.agent.sandbox import MODES, Mode, Sandbox, SandboxError, find_bwrap, spawn, unavailable
    from nodwyn.agent.settings import STOPPED_EXIT, AgentSettings, TurnResult
    from nodwyn.agent.state import rebuild
    from nodwyn.agent.strategies import compact, switch_model
    from nodwyn.agent.tools import EDITS, SUB_AGENT, Approver, Outcome, builtin_tools, catalog
    from nodwyn.agent.tools.base import Tool, ToolContext, declined, fail
    from nodwyn.agent.tools.env import scrub_env
    from nodwyn.agent.tools.procs import ProcessGroups, group_alive, kill_group
    from nodwyn.agent.tools.protect import Protected

__all__ = [
    "EDITS", "MODES", "STOPPED_EXIT", "SUB_AGENT", "Agent", "AgentSettings", "Approver", "Display", "Mode",
    "Outcome", "ProcessGroups", "Protected", "Sandbox", "SandboxError", "Tool", "ToolContext", "TurnResult",
    "builtin_tools", "catalog", "check_task", "compact", "declined", "fail", "find_bwrap", "group_alive",
    "image_size", "kill_group", "read_image", "rebuild", "scrub_env", "spawn", "switch_model",
    "unavailable",
]  # fmt: skip

__getattr__ = lazy(__name__, {
    "attach": "image_size read_image", "fits": "check_task", "loop": "Agent", "ports": "Display",
    "sandbox": "MODES Mode Sandbox SandboxError find_bwrap spawn unavailable",
    "settings": "STOPPED_EXIT AgentSettings TurnResult", "state": "rebuild",
    "strategies": "compact switch_model", "tools": "EDITS SUB_AGENT Approver Outcome builtin_tools catalog",
    "tools.base": "Tool ToolContext declined fail", "tools.env": "scrub_env",
    "tools.procs": "ProcessGroups group_alive kill_group", "tools.protect": "Protected",
})  # fmt: skip
