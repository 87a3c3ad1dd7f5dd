"""Walking the workspace for glob and grep: sorted, pruned (.git, .venv, ...), never following a
symlink out of the workspace, stoppable; and glob patterns (`**`, `*`, `?`, `[..]`, `{a,b}`)
translated to regular expressions over '/'-separated relative paths."""
from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Iterator

from agent_core.tools.sandbox import is_inside, is_protected

MAGIC = re.compile(r"[*?\[{]")


def expand_braces(pattern: str) -> list[str]:
    """'*.{py,md}' -> ['*.py', '*.md'] (nested braces expand too)."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    out: list[str] = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(pattern[:m.start()] + alt + pattern[m.end():]))
    return out


def _segment(part: str) -> str:
    out, i = [], 0
    while i < len(part):
        c = part[i]
        if c == "*":
            while i + 1 < len(part) and part[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (j := part.find("]", i + 2)) != -1:
            body = part[i + 1:j]
            if body[0] in "!^":
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex matching relative posix paths the pattern matches; `**` spans folders (also none)."""
    alts = []
    for pat in expand_braces(pattern):
        parts = [p for p in pat.split("/") if p not in ("", ".")]
        rx = []
        for idx, part in enumerate(parts):
            last = idx == len(parts) - 1
            if part == "**":
                rx.append(".*" if last else "(?:[^/]+/)*")
            else:
                rx.append(_segment(part) + ("" if last else "/"))
        alts.append("".join(rx))
    return re.compile("(?:" + "|".join(alts) + r")\Z")


def literal_prefix(pattern: str) -> str:
    """The leading folders with no glob characters: where a walk for this pattern can start."""
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    lead = []
    for part in parts[:-1]:
        if MAGIC.search(part) or part == "**":
            break
        lead.append(part)
    return "/".join(lead)


def _hidden(entry: os.DirEntry, root: Path, protected: tuple[Path, ...]) -> bool:
    """A symlink leaving `root`, or anything in ctxtui's own state. A plain entry's path is already
    real (walks start at a real path and never descend through a symlink); a symlink's is resolved."""
    if not entry.is_symlink():
        return is_protected(entry.path, protected)
    real = os.path.realpath(entry.path)
    return not is_inside(root, Path(real)) or is_protected(real, protected)


def walk(root: Path, start: Path, skip_dirs: frozenset[str], stop: threading.Event,
         protected: tuple[Path, ...] = ()) -> Iterator[tuple[str, Path, bool]]:
    """(path relative to root, absolute path, is_dir) for everything under `start`, sorted by name
    per folder, depth first. Skips `skip_dirs` below `start`, symlinks that leave `root`, and
    `protected` folders (ctxtui's state) wherever they are."""
    stack = [start]
    while stack and not stop.is_set():
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for e in entries:
            p = Path(e.path)
            try:
                if _hidden(e, root, protected):
                    continue
                is_dir = e.is_dir()       # follows an inside symlink; we still do not descend into it
            except OSError:
                continue
            rel = p.relative_to(root).as_posix()
            yield rel, p, is_dir
            if is_dir and not e.is_symlink() and e.name not in skip_dirs:
                subdirs.append(p)
        stack.extend(reversed(subdirs))
