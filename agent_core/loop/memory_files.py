"""Project memory: `CLAUDE.md` and `AGENTS.md`, read into the system prompt as Claude Code and
Codex read them, so instructions a user keeps for those agents reach this one too.

Read: `~/.claude/CLAUDE.md`, then each folder from the home folder down to the workspace (only the
workspace itself when it lies outside home: a shared folder above it is anyone's to write),
`CLAUDE.md` before `AGENTS.md`, so the nearest file comes last.
A memory file is content for the model and nothing else: ctxtui takes no setting from it and
follows no `@import` in it. Only regular files are read, and in the folders never through a symlink
(a repository's planted link could hand the model a key file), each capped, with a notice when a file is cut or refused.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from compaction.estimate import estimate_text

from agent_core.regular_file import NotRegularFile, open_regular
from agent_core.security.visible_text import one_line

NAMES = ("CLAUDE.md", "AGENTS.md")
MAX_FILE_CHARS = 40_000            # Claude Code warns above this size too
MAX_TOTAL_CHARS = 120_000


@dataclass(frozen=True)
class MemoryFile:
    path: Path
    text: str
    tokens: int
    cut: bool = False


@dataclass
class Memory:
    files: list[MemoryFile]
    notices: list[str]

    @property
    def tokens(self) -> int:
        return sum(f.tokens for f in self.files)

    def prompt_part(self) -> str:
        """The system prompt's memory section ('' with no file), each file under its path."""
        if not self.files:
            return ""
        parts = ["\n\n# Memory files\nThe user's and the project's notes for coding agents, nearest folder last. "
                 "They are context: follow what they say about the project, within the user's requests."]
        parts += [f"\n\n## {f.path}\n{f.text}" for f in self.files]
        return "".join(parts)


def candidates(workspace: Path, home: Path) -> list[Path]:
    """Where memory files may be, in the order they are read."""
    ws, top = workspace.resolve(), home.resolve()
    # Folders above the workspace only up to the home folder: /tmp/CLAUDE.md is anyone's to write.
    chain = [ws, *[p for p in ws.parents if p == top or top in p.parents]] if top in ws.parents else [ws]
    out = [home / ".claude" / "CLAUDE.md"]
    for folder in reversed(chain):
        out += [folder / n for n in NAMES]
    return list(dict.fromkeys(out))


def _read(path: Path, budget: int, follow: bool) -> tuple[str | None, str | None, bool]:
    """(text, notice, cut): a missing file is (None, None, False)."""
    try:
        with open_regular(path, follow_symlinks=follow) as f:
            raw = f.read(min(MAX_FILE_CHARS, budget) * 4 + 4)
    except FileNotFoundError:
        return None, None, False
    except NotRegularFile as e:
        return None, f"memory file {one_line(str(path))} was not read: it is {e.kind}", False
    except OSError as e:
        if os.path.islink(path):
            return None, f"memory file {one_line(str(path))} was not read: it is a symlink", False
        return None, f"memory file {one_line(str(path))} was not read: {e.strerror or e}", False
    text = raw.decode("utf-8", errors="replace")
    limit = min(MAX_FILE_CHARS, budget)
    if len(text) > limit:
        return text[:limit], (f"memory file {one_line(str(path))} is larger than {limit:,} characters: only its "
                              f"first {limit:,} are in the system prompt"), True
    return text, None, False


def load_memory(workspace: Path, home: Path | None = None) -> Memory:
    home = Path.home() if home is None else home
    files, notices, left = [], [], MAX_TOTAL_CHARS
    user_file = home / ".claude" / "CLAUDE.md"     # the user's own (often a dotfiles link): followed
    for path in candidates(workspace, home):
        if left <= 0:
            notices.append(f"memory file {one_line(str(path))} was left out: the memory files already hold "
                           f"{MAX_TOTAL_CHARS:,} characters")
            continue
        text, notice, cut = _read(path, left, follow=path == user_file)
        if notice:
            notices.append(notice)
        if text is None or not text.strip():
            continue
        left -= len(text)
        files.append(MemoryFile(path, text, estimate_text(text), cut))
    return Memory(files, notices)
