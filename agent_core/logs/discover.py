"""Which files a path stands for: a log file plus its sub-agent logs, or every log under a folder."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from agent_core.logs.files import check_regular


def claude_projects_dir(env: dict[str, str] | None = None) -> Path:
    """`$CLAUDE_CONFIG_DIR/projects` when set, else `~/.claude/projects` (Claude Code's own rule)."""
    env = os.environ if env is None else env
    configured = (env.get("CLAUDE_CONFIG_DIR") or "").strip()
    base = Path(configured).expanduser() if configured else Path.home() / ".claude"
    return base / "projects"


def _is_log(path: Path) -> bool:
    # ctxtui keeps whole-history transcripts next to its logs: they repeat usage already counted.
    return path.suffix == ".jsonl" and path.parent.name != "transcripts" and not path.name.startswith(".")


def _walk(folder: Path) -> list[Path]:
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "transcripts" and not d.startswith("."))
        out.extend(Path(root) / f for f in sorted(files) if _is_log(Path(root) / f))
    return out


def expand(path: Path) -> list[Path]:
    """A file: itself, then the logs in its session folder (`<stem>/subagents/*.jsonl`).
    A folder: every `*.jsonl` below it, main logs before the sub-agent logs of their session."""
    path = Path(path)
    if path.is_dir():
        files = _walk(path)
        return sorted(files, key=lambda p: (p.parent.name == "subagents", str(p)))
    out = [path]
    folder = path.with_suffix("")
    if folder.is_dir():
        out.extend(_walk(folder))
    return out


def discover(paths: list[Path]) -> list[Path]:
    """Every log the given paths stand for, each once, in a stable order. Raises FileNotFoundError
    naming the first path that does not exist."""
    seen: set[Path] = set()
    out: list[Path] = []
    for p in paths:
        p = Path(p).expanduser()
        if not p.exists():
            raise FileNotFoundError(str(p))
        for f in expand(p):
            key = Path(os.path.realpath(f))    # never raises, even on a symlink loop
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


def newest(paths: Iterable[Path]) -> Path | None:
    """The most recently written of these files (ties broken by path); vanished files, and paths
    that are not regular files (a FIFO or a symlink to a device), are skipped."""
    best: tuple[float, str] | None = None
    found = None
    for f in paths:
        try:
            key = (check_regular(f).st_mtime, str(f))
        except OSError:
            continue
        if best is None or key > best:
            best, found = key, f
    return found


def newest_log(path: Path) -> Path | None:
    """The log `ctxtui watch` follows for a folder: the most recently written main log below it
    (sub-agent logs belong to their session, so they are never picked on their own)."""
    path = Path(path).expanduser()
    if path.is_file():
        return path
    return newest(f for f in (_walk(path) if path.is_dir() else []) if f.parent.name != "subagents")
