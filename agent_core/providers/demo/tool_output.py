"""What the demo reads out of tool results: the files a listing names, grep hits, a first line.
The planner (what to call next) and the answer (what to say) both use these."""
from __future__ import annotations

import re

from agent_core.providers.demo.conversation import Call
from agent_core.providers.demo.workspace import Workspace

_GREP_HIT = re.compile(r"^([^:\n]+):(\d+):(.*)$")


def target(c: Call) -> str:
    return str(c.input.get("path") or c.input.get("pattern") or c.input.get("command") or c.name)


def first_line(text: str | None, width: int = 120) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            s = line.strip()
            return s if len(s) <= width else s[:width - 1] + "…"
    return "(no output)"


def paths_in(ws: Workspace, text: str | None) -> list[str]:
    """Files inside the workspace that a glob/ls/find output names, in order."""
    out: list[str] = []
    for line in (text or "").splitlines()[:3000]:
        s = line.strip()
        m = _GREP_HIT.match(s)
        cand = m.group(1) if m else s.split()[-1] if s.split() else ""
        rel = ws.relative(cand) if cand else None
        if rel and rel not in out:
            out.append(rel)
    return out


def grep_hits(ws: Workspace, text: str | None) -> list[tuple[str, int, str]]:
    out = []
    for line in (text or "").splitlines()[:2000]:
        m = _GREP_HIT.match(line.strip())
        if m:
            rel = ws.relative(m.group(1))
            if rel:
                out.append((rel, int(m.group(2)), m.group(3).strip()))
    return out
