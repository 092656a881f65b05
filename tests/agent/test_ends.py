"""How a reply ends a turn (agent.ends, pure): a bare tool response the local model wrote itself is
an empty reply (exit 17), not an answer; an answer cut at the cap is an end with its text; a call
cut at the cap is not run."""

from __future__ import annotations

from nodwyn.agent import ends
from nodwyn.agent.settings import EMPTY_REPLY, OUTPUT_CAP, STOPPED_EXIT
from nodwyn.dialects.local import parse_calls
from nodwyn.values.content import ToolCall
from nodwyn.values.request import Response, Usage


def reply(text: str, finish: str = "stop", out: int = 9) -> Response:
    prose, calls = parse_calls(text, "p", {"fs-read"})
    return Response(text=prose, calls=calls, raw=text, finish=finish, usage=Usage(output_tokens=out))


def test_a_bare_tool_response_is_an_empty_reply() -> None:
    end = ends.of_reply(reply("<tool_response>\nThe file says 3.\n</tool_response>"), "local")
    assert end is not None and end.stopped == EMPTY_REPLY and STOPPED_EXIT[end.stopped] == 17
    assert ends.of_reply(reply("It returns 3."), "local") is None


def test_an_answer_cut_at_the_cap_keeps_its_text_and_says_where() -> None:
    end = ends.of_reply(reply("It returns", finish="length", out=256), "local")
    assert end is not None and end.stopped == OUTPUT_CAP and end.text == "It returns" and end.cut_at == 256
    assert "cut at 256 output tokens" in end.why


def test_only_the_last_call_of_a_cut_reply_is_the_cut_one() -> None:
    r = Response(
        text="",
        calls=(
            ToolCall(id="a", name="fs-read", arguments='{"path": "a"}'),
            ToolCall(id="b", name="fs-write", arguments='{"path": "b", "content": "x'),
        ),
        finish="length",
        usage=Usage(output_tokens=100),
    )
    assert ends.cut_call(r, 0) is None and ends.cut_call(r, 1) == 100
    assert ends.whole(r.calls[0].arguments) and not ends.whole(r.calls[1].arguments)
    assert "cut at the output cap (100 output tokens)" in ends.cut_outcome(r.calls[1], 100).text
