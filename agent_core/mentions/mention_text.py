"""`@path` in a prompt: finding the mentions, and writing a path so it reads back as itself.

A mention starts at an `@` at the start of the prompt or after a blank or an opening bracket (so
`me@example.com` is not one) and runs to the next blank; punctuation that ends a sentence is not
part of it (`see @a.py.` names `a.py`). A path with blanks, quotes, backslashes or control
characters is written quoted, `@"my file.txt"`, with `\\"`, `\\\\`, `\\n`, `\\t` and `\\xNN` escapes."""
from __future__ import annotations

import re

MARK = "@"
_BEFORE = frozenset(" \t\n([{")
_TRAILING = ".,;:!?)]}'\""
_PLAIN = re.compile(r"[^\s\"'\\\x00-\x1f\x7f-\x9f]+")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def quote(path: str) -> str:
    """`path` as a mention: `@path`, or `@"..."` with escapes when it could not be read back bare."""
    if _PLAIN.fullmatch(path) and not path.endswith(tuple(_TRAILING)):
        return MARK + path
    out = []
    for ch in path:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch])
        elif ord(ch) < 0x20 or 0x7f <= ord(ch) <= 0x9f:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return f'{MARK}"{"".join(out)}"'


def _quoted(text: str, i: int) -> tuple[str, int] | None:
    """The quoted path starting at text[i] == '"' and the index after it; None if never closed."""
    out: list[str] = []
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == '"':
            return "".join(out), j + 1
        if ch == "\\" and j + 1 < len(text):
            nxt = text[j + 1]
            if nxt == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", text[j + 2:j + 4]):
                out.append(chr(int(text[j + 2:j + 4], 16)))
                j += 4
                continue
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            j += 2
            continue
        if ch == "\n":
            return None
        out.append(ch)
        j += 1
    return None


def find_mentions(text: str) -> list[str]:
    """The paths mentioned in `text`, in order, repeats included (the caller attaches each once)."""
    found: list[str] = []
    i = text.find(MARK)
    while i != -1:
        nxt = i + 1
        if i == 0 or text[i - 1] in _BEFORE:
            if text.startswith('"', i + 1):
                got = _quoted(text, i + 1)
                if got is not None:
                    path, nxt = got
                    if path:
                        found.append(path)
            else:
                m = re.compile(r"\S+").match(text, i + 1)
                if m:
                    path = m.group().rstrip(_TRAILING)
                    nxt = m.end()
                    if path and not path.startswith(MARK):
                        found.append(path)
        i = text.find(MARK, nxt)
    return found


def mention_at(text: str, cursor: int) -> tuple[int, str] | None:
    """The mention being typed just before `cursor`: (index of its `@`, what follows it), or None.
    For the picker: it opens while the cursor is inside a bare `@word`."""
    start = cursor
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    word = text[start:cursor]
    at = word.rfind(MARK)
    if at == -1:
        return None
    pos = start + at
    if pos > 0 and text[pos - 1] not in _BEFORE:
        return None
    query = word[at + 1:]
    if MARK in query or query.startswith('"'):
        return None
    return pos, query
