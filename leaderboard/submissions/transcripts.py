"""Reading a stored agent transcript (uploads/transcripts.py checked it on upload) into steps a page can show: who
spoke, the text, each tool call with its arguments, each tool result, and the platform's metered feedback runs a step
refers to. Formats differ between harnesses; the common ones are read (OpenAI-style ``tool_calls`` and ``role: tool``,
Anthropic-style content blocks ``text`` / ``tool_use`` / ``tool_result``, and flat events ``{"type": "tool_call"}``),
and anything else is still shown, as its JSON."""

from __future__ import annotations

import json
import re

MAX_TEXT = 20_000  # characters of one block shown; the rest is cut (the raw file has it all)
_RUN_PATTERNS = [
    re.compile(r"/feedback/runs/(\d{1,18})/"),
    re.compile(r"feedback[ _-]?run[\s#:=\"']{0,4}(\d{1,18})", re.IGNORECASE),
]


def _text(value) -> str:
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, indent=1, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"\n… ({len(text) - MAX_TEXT:,} more characters)"


def _arguments(value) -> str:
    """Tool arguments: a JSON string (OpenAI) is parsed to be shown indented; anything else as it is."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return _text(value)
    return _text(value)


def _result_text(content) -> str:
    if isinstance(content, list):  # Anthropic: a list of blocks
        parts = [b.get("text") if isinstance(b, dict) and b.get("type") == "text" else b for b in content]
        return "\n".join(p if isinstance(p, str) else _text(p) for p in parts)
    return _text(content if content is not None else "")


def step(number: int, data: dict) -> dict:
    """One line of a transcript as the page shows it."""
    out = {
        "n": number,
        "role": str(data.get("role") or data.get("type") or "event")[:40],
        "texts": [],
        "calls": [],
        "results": [],
    }
    content = data.get("content")
    if isinstance(content, str):
        (out["results"] if out["role"] == "tool" else out["texts"]).append(
            {"id": str(data.get("tool_call_id") or ""), "text": _text(content), "error": False}
            if out["role"] == "tool"
            else _text(content)
        )
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                out["texts"].append(_text(block))
            elif block.get("type") == "text":
                out["texts"].append(_text(block.get("text", "")))
            elif block.get("type") in ("tool_use", "tool_call", "function_call"):
                out["calls"].append(
                    {
                        "id": str(block.get("id") or ""),
                        "name": str(block.get("name") or "?")[:200],
                        "args": _arguments(block.get("input", block.get("arguments"))),
                    }
                )
            elif block.get("type") in ("tool_result", "function_call_output"):
                out["results"].append(
                    {
                        "id": str(block.get("tool_use_id") or block.get("call_id") or ""),
                        "text": _result_text(block.get("content", block.get("output"))),
                        "error": bool(block.get("is_error")),
                    }
                )
            else:
                out["texts"].append(_text(block))
    tool_calls = data.get("tool_calls")
    for call in tool_calls if isinstance(tool_calls, list) else []:
        if isinstance(call, dict):
            function = call.get("function") if isinstance(call.get("function"), dict) else call
            out["calls"].append(
                {
                    "id": str(call.get("id") or ""),
                    "name": str(function.get("name") or "?")[:200],
                    "args": _arguments(function.get("arguments", function.get("input"))),
                }
            )
    kind = data.get("type")
    if kind in ("tool_call", "function_call") and not out["calls"]:
        out["calls"].append(
            {
                "id": str(data.get("id") or data.get("call_id") or ""),
                "name": str(data.get("name") or "?")[:200],
                "args": _arguments(data.get("arguments", data.get("input"))),
            }
        )
    if kind in ("tool_result", "function_call_output") and not out["results"]:
        out["results"].append(
            {
                "id": str(data.get("call_id") or data.get("tool_call_id") or ""),
                "text": _result_text(data.get("output", data.get("content", data.get("result")))),
                "error": bool(data.get("is_error")),
            }
        )
    if not (out["texts"] or out["calls"] or out["results"]):
        out["texts"].append(_text(data))  # an event of another shape: its JSON
    out["runs"] = referenced_runs(data)
    return out


def referenced_runs(data) -> list[int]:
    """Feedback run ids a step mentions (a run's URL, "feedback run 12", a ``feedback_run`` field)."""
    blob = json.dumps(data, ensure_ascii=False, default=str)
    found = {int(m.group(1)) for pattern in _RUN_PATTERNS for m in pattern.finditer(blob)}
    if isinstance(data, dict):
        for key in ("feedback_run", "feedback_run_id"):
            if isinstance(data.get(key), int) and not isinstance(data.get(key), bool):
                found.add(data[key])
    return sorted(found)


def steps(content: str) -> list[dict]:
    """Every step of a stored transcript (each line was checked to be a JSON object on upload)."""
    out = []
    for line in content.split("\n"):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):  # stored before the checks: shown as text
            data = {"type": "unreadable", "content": line[:MAX_TEXT]}
        out.append(step(len(out) + 1, data if isinstance(data, dict) else {"content": data}))
    return out
