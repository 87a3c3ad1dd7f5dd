"""What a recorded assistant message used: the files and identifiers in its tool calls' inputs.

Replay asks "was what the assistant used next still in the context a policy would have sent?";
these helpers say what "used" means: the paths a tool call names (`file_path`, `path`,
`notebook_path`), its search patterns, and the file-like words of a shell command. A tool result's
`files` are the paths its call read or wrote.
"""
from __future__ import annotations

import re
import shlex
from typing import Any, Iterable

PATH_KEYS = ("file_path", "path", "notebook_path")
PATTERN_KEYS = ("pattern", "glob", "query")
# A word that looks like a file: has a slash, or a dotted extension of letters (not "1.5" or "e.g.").
_FILE_WORD = re.compile(r"^[\w@.~+-]*(/[\w@.+-]*)+$|^[\w@+-][\w@.+-]*\.[A-Za-z][A-Za-z0-9]{0,7}$")
MAX_COMMAND_WORDS = 200
# A word of prose that may name a file: no spaces, quotes, brackets or sentence punctuation inside.
_TEXT_WORD = re.compile(r"[^\s'\"`()\[\]{}<>,;:!?*|=]+")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v]
    return []


def command_files(command: str) -> list[str]:
    """The words of a shell command that look like files (`cat lib/a.ex` -> `lib/a.ex`)."""
    try:
        words = shlex.split(command, comments=False, posix=True)
    except ValueError:             # an unbalanced quote: fall back to plain words
        words = command.split()
    out = []
    for w in words[:MAX_COMMAND_WORDS]:
        w = w.strip("'\"();,`")
        if len(w) > 1 and not w.startswith("-") and "://" not in w and _FILE_WORD.match(w):
            out.append(w)
    return out


def text_files(text: str) -> list[str]:
    """The words of prose (a prompt, an answer's text) that may name a file: each holds a `/` or a
    `.` between word characters (`src/app.py`, `file_07.txt`, `@lib/a.ex` -> `lib/a.ex`), a
    sentence's final `.` and a leading `@` left out. Which of them name a file read earlier is the
    caller's question (replay/content.py resolves them against the paths read)."""
    out = []
    for m in _TEXT_WORD.finditer(text):
        w = m.group().rstrip(".").lstrip("@")
        if len(w) > 1 and ("/" in w or "." in w) and "://" not in w and any(c.isalnum() for c in w):
            out.append(w)
    return out


def call_files(tool_input: Any) -> list[str]:
    """The paths a tool call reads or writes (its path arguments)."""
    if not isinstance(tool_input, dict):
        return []
    return [s for k in PATH_KEYS for s in _strings(tool_input.get(k))]


def call_references(tool_input: Any) -> list[str]:
    """Files and identifiers a tool call uses: its paths, patterns and the file-like words of its
    command."""
    if not isinstance(tool_input, dict):
        return []
    out = call_files(tool_input)
    out += [s for k in PATTERN_KEYS for s in _strings(tool_input.get(k))]
    command = tool_input.get("command")
    if isinstance(command, str):
        out += command_files(command)
    return out


def unique(items: Iterable[str]) -> tuple[str, ...]:
    """In first-seen order, each once."""
    return tuple(dict.fromkeys(items))
