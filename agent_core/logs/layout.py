"""The two folder rules of session logs, each owned here:

- Claude Code: a session `<project>/<session>.jsonl` keeps the logs of the sub-agents it started in
  `<project>/<session>/subagents/*.jsonl` (`subagents_dir`, `is_subagent_log`, ...);
- ctxtui: a session `<sessions>/<id>.jsonl` keeps its compaction transcripts (the whole history
  before each summary or snip, one entry a line) in `<sessions>/<id>/transcripts/*.jsonl`
  (`is_transcript`, `transcript_logs`). compaction.transcript writes them, in the session folder
  the loop hands the pipeline (agent_core/sessions/paths.py: `session_dir`); they repeat usage
  the session log already counts, so the log readers leave them out.

Discovery (discover.py), the readers (a sub-agent log's session id), `ctxtui usage` (its project),
`ctxtui watch`, the status line and the transcript browser all ask here. Nothing but pathlib is
imported: `ctxtui usage` and the status line load this at start-up, and must not load
agent_core.sessions or compaction.
"""
from __future__ import annotations

from pathlib import Path

SUBAGENTS = "subagents"
TRANSCRIPTS = "transcripts"


# ----- Claude Code's sub-agent logs ----------------------------------------------------------------
def subagents_dir(log: Path) -> Path:
    """Where the sub-agent logs of the session `log` live."""
    return Path(log).with_suffix("") / SUBAGENTS


def is_subagent_log(path: Path) -> bool:
    """A file in some session's sub-agents folder."""
    return Path(path).parent.name == SUBAGENTS


def is_subagent_of(path: Path, log: Path) -> bool:
    """A file in the sub-agents folder of the session `log`."""
    return Path(path).parent == subagents_dir(log)


def subagent_session_dir(path: Path) -> Path:
    """The session folder (`<project>/<session>`) holding the sub-agent log `path`."""
    return Path(path).parent.parent


# ----- ctxtui's compaction transcripts -------------------------------------------------------------
def is_transcripts_folder(name: str) -> bool:
    """A folder of that name holds transcripts, not logs: a walk over logs skips it."""
    return name == TRANSCRIPTS


def is_transcript(path: Path) -> bool:
    """A file in a session's transcripts folder, not a session log."""
    return is_transcripts_folder(Path(path).parent.name)


def transcript_logs(sessions: Path) -> list[tuple[Path, str]]:
    """Every compaction transcript under a ctxtui sessions folder, with the id of its session."""
    return [(p, p.parent.parent.name) for p in Path(sessions).glob(f"*/{TRANSCRIPTS}/*.jsonl")]
