"""The state records of a session log, applied: whole copies checked part by part, changes in order.

The state half of the replay (session_reader.SessionReplay), apart from its history half: a part of
the wrong type is dropped with a warning (the loader's users then fall back to their defaults for it)
instead of crashing the resume, and a part a change cannot be applied to takes no further change
until a later record writes it whole (`damaged`). The operations are state_delta.py's.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from agent_core.pricing.tally import cost_state_problem
from agent_core.sessions.state_delta import apply_op

Warn = Callable[[str, str], None]     # (message, kind): the replay's warning list


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


# What each state part read at resume must look like; a part that does not is dropped (the
# loader's users then fall back to their defaults for it) instead of crashing the resume.
STATE_CHECKS: dict[str, tuple[str, Any]] = {
    "pipeline": ("an object with an object 'layers' of objects",
                 lambda v: isinstance(v, dict) and isinstance(v.get("layers", {}), dict)
                 and all(isinstance(x, dict) for x in v.get("layers", {}).values())),
    "cost": ("a cost book whose figures one session can reach",
             lambda v: cost_state_problem(v) is None),
    "permissions": ("an object with a list of tool names 'always'",
                    lambda v: isinstance(v, dict) and isinstance(v.get("always", []), list)
                    and all(isinstance(t, str) for t in v.get("always", []))),
    "turns": ("a whole number", _is_count),
    "notes": ("text", lambda v: isinstance(v, str)),
}


def short(v: Any) -> str:
    """A value as JSON, cut to fit in a warning."""
    text = json.dumps(v, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def checked_state(rec: Mapping[str, Any], n: int, warn: Warn) -> dict:
    """The record's state parts, less those of the wrong type (each one a warning)."""
    out = {}
    for k, v in rec.items():
        if k in ("t", "at", "all", "index"):
            continue
        check = STATE_CHECKS.get(k)
        if check is not None and not check[1](v):
            why = cost_state_problem(v) if k == "cost" else None
            warn(f"line {n}: state {k!r} must be {check[0]}, got {why or short(v)}; ignored", "state")
            continue
        out[k] = v
    return out


@dataclass
class ReplayedState:
    """The state the records build (`parts`: pipeline, cost, permissions, ...), and what is
    known to be wrong with it; `warn` is the replay's warning list."""
    warn: Warn
    parts: dict = field(default_factory=dict)
    damaged: set[str] = field(default_factory=set)      # parts a change could not be applied to, until whole again
    unchecked: dict[str, int] = field(default_factory=dict)   # part -> line of its latest change, not checked yet

    def whole(self, rec: Mapping[str, Any], n: int) -> None:
        """A state record: its parts of the right type, written whole (a damaged part is whole again)."""
        parts = checked_state(rec, n, self.warn)
        self.parts.update(parts)
        self.damaged.difference_update(parts)
        for k in parts:
            self.unchecked.pop(k, None)

    def delta(self, rec: Mapping[str, Any], n: int) -> None:
        """A delta record: its operations, in order (state_delta.py). A part one of them cannot be
        applied to is dropped with a warning and takes no further change until a later record
        writes it whole; the parts they touched are checked once all changes are in (`check`)."""
        ops = rec.get("ops")
        if not isinstance(ops, list):
            raise ValueError("'ops' is not a list")
        touched: set[str] = set()
        for op in ops:
            part = op[1][0] if isinstance(op, list) and len(op) > 1 and isinstance(op[1], list) and op[1] else None
            whole = isinstance(part, str) and op[0] == "set" and len(op[1]) == 1
            if whole:
                self.damaged.discard(part)
            elif part in self.damaged:
                continue
            try:
                touched.add(apply_op(self.parts, op))
            except ValueError as e:
                if not isinstance(part, str):
                    self.warn(f"line {n}: a state change {short(op)} is not readable ({e}); ignored", "state")
                    continue
                self.damaged.add(part)
                self.parts.pop(part, None)
                self.warn(f"line {n}: a change to state {part!r} does not apply ({e}); ignored until the part "
                          "is saved whole again", "state")
        self.unchecked.update(dict.fromkeys(touched, n))

    def check(self) -> None:
        """The parts changes were applied to, checked once they are all in (not after each line:
        a cost book is checked in full). One of the wrong type is dropped, as a snapshot would be."""
        for k, n in self.unchecked.items():
            if k in self.parts and k not in checked_state({k: self.parts[k]}, n, self.warn):
                self.parts.pop(k)
                self.damaged.add(k)
        self.unchecked.clear()
