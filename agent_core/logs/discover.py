"""Where session logs are: every root, and the folders searched, in one place.

- Claude Code's projects folders: `projects` in each folder of `$CLAUDE_CONFIG_DIR` (a comma-separated
  list, as Claude Code and ccusage read it), else in `$XDG_CONFIG_HOME/claude` (`~/.config/claude`,
  where newer Claude Code versions write) and `~/.claude` (`claude_projects_dirs`), holding
  `<project>/<session>.jsonl` and `<session>/subagents/*.jsonl`
  (the sub-agent rule: layout.py);
- ctxtui's sessions of a workspace, in its state folder (`workspace_sessions`; the layout itself is
  agent_core/sessions/paths.py, the transcripts rule layout.py): `<id>.jsonl` and `<id>/transcripts/*.jsonl`.

Resume (`latest_session`, `list_sessions`), the transcript browser (`list_logs`), `ctxtui usage`
(`discover`) and `ctxtui watch` (`watch_default_folder`, `newest_log`) all find their logs here.
"""
from __future__ import annotations

import os
from collections import namedtuple
from pathlib import Path

from agent_core.logs.files import check_regular, open_regular
from agent_core.logs.layout import is_subagent_log, is_transcript, is_transcripts_folder, subagents_dir, transcript_logs

TYPE_CHECKING = False    # typing stays unloaded at run time: 3 ms of every status line call
if TYPE_CHECKING:
    from typing import Iterable, Mapping
    from agent_core.sessions.session_head import SessionHead

# agent_core.sessions (and the compaction package under it) is imported only by the functions that
# need ctxtui's own session layout: `ctxtui usage` and the status line never load it (start-up time).

HEAD_BYTES = 65_536       # enough for the meta line and the first prompt of a session


def claude_config_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """Claude Code's config folders: each entry of `$CLAUDE_CONFIG_DIR` (comma-separated) when set,
    else `$XDG_CONFIG_HOME/claude` (default `~/.config/claude`) and `~/.claude`."""
    env = os.environ if env is None else env
    configured = [p.strip() for p in (env.get("CLAUDE_CONFIG_DIR") or "").split(",") if p.strip()]
    if configured:
        return [Path(p).expanduser() for p in configured]
    home = Path((env.get("HOME") or "").strip() or Path.home())
    xdg = (env.get("XDG_CONFIG_HOME") or "").strip()
    return [(Path(xdg).expanduser() if xdg else home / ".config") / "claude", home / ".claude"]


def claude_projects_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """Every Claude Code projects folder that exists, in `claude_config_dirs` order (read only)."""
    return [d / "projects" for d in claude_config_dirs(env) if (d / "projects").is_dir()]


def claude_projects_dir(env: Mapping[str, str] | None = None) -> Path:
    """The one projects folder a single view follows: of those that exist, the one written last;
    when none does, the last candidate (`~/.claude/projects` by default), for messages."""
    found = claude_projects_dirs(env)
    if not found:
        return claude_config_dirs(env)[-1] / "projects"

    def written(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0
    return max(found, key=written) if len(found) > 1 else found[0]


def claude_projects_root(env: Mapping[str, str] | None = None) -> Path | None:
    """Claude Code's projects folder when it exists (read only, never created)."""
    p = claude_projects_dir(env)
    return p if p.is_dir() else None


def workspace_sessions(workspace: Path, env: Mapping[str, str] | None = None) -> Path:
    """The ctxtui sessions folder of `workspace`, in the state folder ($CTXTUI_HOME or the default)."""
    from agent_core.sessions.paths import project_state_dir, sessions_dir, state_root  # noqa: PLC0415  (start-up time)
    return sessions_dir(project_state_dir(state_root(env), Path(workspace).resolve()))


def watch_default_folder(cwd: Path, env: Mapping[str, str] | None = None) -> Path:
    """What `ctxtui watch` follows when given no path: the ctxtui sessions of `cwd` when they hold
    a log, else Claude Code's projects folder."""
    ours = workspace_sessions(cwd, env)
    if ours.is_dir() and newest_log(ours) is not None:
        return ours
    return claude_projects_dir(env)


def _is_log(path: Path) -> bool:
    # ctxtui keeps whole-history transcripts next to its logs: they repeat usage already counted.
    return path.suffix == ".jsonl" and not is_transcript(path) and not path.name.startswith(".")


def _walk(folder: Path) -> list[Path]:
    out: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not is_transcripts_folder(d) and not d.startswith("."))
        out.extend(Path(root) / f for f in sorted(files) if _is_log(Path(root) / f))
    return out


def expand(path: Path) -> list[Path]:
    """A file: itself, then the logs in its session folder (`<stem>/subagents/*.jsonl`).
    A folder: every `*.jsonl` below it, main logs before the sub-agent logs of their session."""
    path = Path(path)
    if path.is_dir():
        files = _walk(path)
        return sorted(files, key=lambda p: (is_subagent_log(p), str(p)))
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


def subagent_logs(log: Path) -> list[Path]:
    """The sub-agent logs of a session so far (`<stem>/subagents/*.jsonl`). Only that folder is
    listed (one scandir), never the whole session folder: a live view calls this on every poll."""
    try:
        found = sorted(e.path for e in os.scandir(subagents_dir(log))
                       if e.name.endswith(".jsonl") and not e.name.startswith(".") and e.is_file())
    except OSError:        # no such folder (the usual case)
        return []
    return [Path(p) for p in found]


def is_main_log(path: Path) -> bool:
    """A session's own log: a .jsonl that is neither a sub-agent log nor a compaction transcript."""
    return _is_log(path) and not is_subagent_log(path)


def newest_log(path: Path) -> Path | None:
    """The log `ctxtui watch` follows for a folder: the most recently written main log below it
    (sub-agent logs belong to their session, so they are never picked on their own)."""
    path = Path(path).expanduser()
    if path.is_file():
        return path
    return newest(f for f in (_walk(path) if path.is_dir() else []) if is_main_log(f))


# ---------------------------------------------------------------- ctxtui sessions

class SessionInfo(namedtuple("SessionInfo", "session_id path created modified size model workspace title",
                             defaults=(None, None, None))):
    """A ctxtui session log, as `--continue` and the resume screen list it. Named tuples here, not
    dataclasses: the status line loads this module on every refresh (dataclasses: 10 ms to import)."""
    __slots__ = ()
    session_id: str
    path: Path
    created: str | None              # from the meta line (ISO 8601, UTC)
    modified: float                  # file mtime
    size: int
    model: str | None
    workspace: str | None
    title: str | None                # the first user prompt, shortened


def read_head(path: Path, limit: int = HEAD_BYTES) -> SessionHead:
    """The meta line and first prompt of a ctxtui log (empty when it cannot be read); only a
    regular file is opened."""
    from agent_core.sessions.session_head import SessionHead, parse_head  # noqa: PLC0415  (start-up time)
    try:
        with open_regular(path) as f:
            return parse_head(f.read(limit))
    except OSError:
        return SessionHead({}, None)


def _text(v: object) -> str | None:
    return v if isinstance(v, str) else None


def list_sessions(state: Path) -> list[SessionInfo]:
    """Every session log in the state folder `state`, most recently written first."""
    from agent_core.sessions.paths import is_session_id, sessions_dir  # noqa: PLC0415  (start-up time)
    folder = sessions_dir(state)
    if not folder.is_dir():
        return []
    out = []
    for p in folder.glob("*.jsonl"):
        if not is_session_id(p.stem):
            continue
        try:
            st = check_regular(p)    # a FIFO or a device named *.jsonl would block or never end
        except OSError:
            continue
        head = read_head(p)
        meta = head.meta
        out.append(SessionInfo(session_id=p.stem, path=p, created=_text(meta.get("created")), modified=st.st_mtime,
                               size=st.st_size, model=_text(meta.get("model")),
                               workspace=_text(meta.get("workspace")), title=head.title))
    out.sort(key=lambda s: (s.modified, s.session_id), reverse=True)
    return out


def latest_session(state: Path) -> SessionInfo | None:
    """The session `--continue` resumes: the one written most recently."""
    sessions = list_sessions(state)
    return sessions[0] if sessions else None


# ---------------------------------------------------------------- the transcript browser

class LogFile(namedtuple("LogFile", "path kind group name size mtime")):
    """A log the transcript browser lists."""
    __slots__ = ()
    path: Path
    kind: str          # session | transcript | claude
    group: str         # session id, or Claude Code project folder
    name: str
    size: int
    mtime: float


def _listing(path: Path, kind: str, group: str) -> LogFile | None:
    """The file's listing, or None when it vanished or is not a regular file (a FIFO, or a symlink
    to a device, would hang or flood the viewer)."""
    try:
        st = check_regular(path)
    except OSError:
        return None
    return LogFile(path, kind, group, path.name, st.st_size, st.st_mtime)


def list_logs(sessions_root: Path | None, claude_root: Path | None) -> list[LogFile]:
    """Every log the transcript browser shows, newest first: ctxtui's session logs and their
    compaction transcripts under `sessions_root`, Claude Code's session logs under `claude_root`.
    Missing roots are skipped, never created."""
    found: list[tuple[Path, str, str]] = []
    if sessions_root is not None and sessions_root.is_dir():
        found += [(p, "session", p.stem) for p in sessions_root.glob("*.jsonl")]
        found += [(p, "transcript", session) for p, session in transcript_logs(sessions_root)]
    if claude_root is not None and claude_root.is_dir():
        found += [(p, "claude", p.parent.name) for p in claude_root.glob("*/*.jsonl")]
    out = [f for f in (_listing(*x) for x in found) if f is not None]
    out.sort(key=lambda f: (-f.mtime, str(f.path)))
    return out
