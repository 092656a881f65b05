"""OpenRouter's ``reasoning_details`` as the fake chat-completions server gives and checks them.

A scripted array streams as fragments (a ``reasoning.text`` in two pieces with its signature on
the last, every other item whole); signed and encrypted items are minted by the server and
remembered in their merged form, and a request may send back only items this server gave.
"""

from __future__ import annotations

from typing import Any

import orjson

from nodwyn.fakes.base import ApiError, State, split_text


def _canonical(item: Any) -> str:
    return orjson.dumps(item, option=orjson.OPT_SORT_KEYS).decode()


def check_details(state: State, details: Any, i: int) -> None:
    if not isinstance(details, list):
        raise ApiError(
            400, f"messages[{i}].reasoning_details must be an array", param=f"messages[{i}].reasoning_details"
        )
    for item in details:
        signed = isinstance(item, dict) and ("data" in item or item.get("signature"))
        if signed and not state.knows(_canonical(item)):
            raise ApiError(
                400,
                "Provider returned error",
                code=400,
                param=f"messages.{i}.reasoning_details",
                type="openrouter-upstream",
            )


def merged_details(fragments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The array a client builds from the fragments, as OpenRouter's own client merges them."""
    out: list[dict[str, Any]] = []
    for f in fragments:
        if (
            out
            and f.get("type") == "reasoning.text" == out[-1].get("type")
            and f.get("index") == out[-1].get("index")
        ):
            out[-1]["text"] = out[-1].get("text", "") + f.get("text", "")
            for k, v in f.items():
                if k != "text" and out[-1].get(k) in (None, ""):  # the first non-empty value
                    out[-1][k] = v
        else:
            out.append(dict(f))
    return out


def detail_fragments(
    state: State, details: tuple[Any, ...], *, empty_signature: bool = False
) -> list[dict[str, Any]]:
    """Stream an array as fragments: a reasoning.text in pieces (signature on the last), the rest whole.
    ``empty_signature``: the first piece of a signed reasoning.text carries ``"signature": ""``, as
    OpenRouter's Claude routes send it (the merge must keep the later, real one).

    The merged array (text joined, first non-null signature and format kept) is what the fake then
    accepts back; signed and encrypted items are remembered as this server's own.
    """
    out: list[dict[str, Any]] = []
    for index, raw in enumerate(details):
        entry = dict(raw) if isinstance(raw, dict) else {"type": "unknown", "value": raw}
        entry.setdefault("index", index)
        if entry.get("type") == "reasoning.encrypted" and "data" not in entry:
            entry["data"] = state.mint("details", str(index))
        if entry.get("type") == "reasoning.text" and "signature" in entry and entry["signature"] is None:
            entry["signature"] = state.mint("signature", str(index))
        if "data" in entry or entry.get("signature"):
            state.minted.add(_canonical(entry))
        if entry.get("type") == "reasoning.text" and len(entry.get("text", "")) > 1:
            pieces = split_text(entry["text"], 2)
            rest = {k: v for k, v in entry.items() if k not in {"text", "signature"}}
            first = {**rest, "text": pieces[0]}
            if empty_signature and entry.get("signature"):
                first["signature"] = ""
            out.append(first)
            tail: dict[str, Any] = {"type": "reasoning.text", "text": pieces[1], "index": entry["index"]}
            if "signature" in entry:
                tail["signature"] = entry["signature"]
            out.append(tail)
        else:
            out.append(entry)
    return out
