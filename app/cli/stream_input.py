"""`ctxtui --headless --input-format stream-json`: prompts as JSON lines on stdin.

Each line is one user message in Claude Code's headless form:

    {"type": "user", "message": {"role": "user", "content": "…"}}

where `content` is a string or a list of text blocks (`{"type": "text", "text": "…"}`, joined by
a blank line). A line that is anything else (not JSON, another `type`, another block type, no
text) is refused with the reason, and the run goes on with the next line. Blank lines are skipped.

The lines are read in a thread of their own and handed to the event loop, so that the run can
wait for the next prompt and still be stopped by a signal at once (a read in the loop's thread
would hold it until the line came), and a script may write one prompt, read its result, then
write the next.
"""
from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, TextIO

from agent_core.sessions.valid_text import decode_input, valid_text

EXPECTED = '{"type": "user", "message": {"role": "user", "content": "…"}}'


class InputLineError(ValueError):
    """A line of stdin that is not a user message; the text says why."""


def _kind(value: Any) -> str:
    """What a value is, in JSON's words (for a message saying what was found instead)."""
    if isinstance(value, dict):
        return "an object" + (f" of type {str(value['type'])[:40]!r}" if "type" in value else "")
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def parse_input_line(line: str) -> str:
    """The prompt one stream-json line carries. Raises InputLineError saying what is wrong."""
    try:
        d = json.loads(line)
    except json.JSONDecodeError as e:
        raise InputLineError(f"not JSON ({e.msg} at column {e.colno}); expected {EXPECTED}") from None
    except (ValueError, RecursionError):
        raise InputLineError(f"not JSON that can be read; expected {EXPECTED}") from None
    if not isinstance(d, dict) or d.get("type") != "user":
        raise InputLineError(f"{_kind(d)}, not a user message; expected {EXPECTED}")
    message = d.get("message")
    if not isinstance(message, dict):
        raise InputLineError(f"`message` is {_kind(message) if 'message' in d else 'missing'}; expected {EXPECTED}")
    if message.get("role", "user") != "user":
        raise InputLineError(f"the message's role is {str(message.get('role'))[:40]!r}; only \"user\" is accepted")
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for i, block in enumerate(content, 1):
            if not isinstance(block, dict) or block.get("type") != "text":
                raise InputLineError(f"content block {i} is {_kind(block)}: only text blocks "
                                     '({"type": "text", "text": "…"}) are accepted')
            if not isinstance(block.get("text"), str):
                raise InputLineError(f"content block {i} has no `text` string")
            parts.append(block["text"])
        text = "\n\n".join(parts)
    else:
        raise InputLineError(f"`content` is {_kind(content) if 'content' in message else 'missing'}; "
                             "expected a string or a list of text blocks")
    if not text.strip():
        raise InputLineError("the message has no text (empty content)")
    return valid_text(text)


class StdinLines:
    """stdin's lines (decoded, invalid UTF-8 as U+FFFD), read by a daemon thread; `get` returns
    the next one, or None at the end of input (or when stdin cannot be read)."""

    def __init__(self, stdin: TextIO, loop: asyncio.AbstractEventLoop) -> None:
        self._stdin = stdin
        self._loop = loop
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._thread = threading.Thread(target=self._read, name="ctxtui-stdin", daemon=True)
        self._thread.start()

    async def get(self) -> str | None:
        return await self._queue.get()

    def _read(self) -> None:
        raw = getattr(self._stdin, "buffer", None)
        source = raw if raw is not None else self._stdin
        try:
            while True:
                line = source.readline()
                if not line or not self._hand_over(decode_input(line)):
                    break
        except (OSError, ValueError):
            pass      # stdin closed or unreadable: the end of input
        finally:
            self._hand_over(None)

    def _hand_over(self, line: str | None) -> bool:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, line)
        except RuntimeError:
            return False      # the run is over and its loop closed: no one is waiting
        return True
