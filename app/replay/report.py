"""The replay report as the `ctxtui replay` screen reads it: plain dataclasses over the engine's dict.

The engine (`agent_core.replay`) hands back the same dict `--json` prints. Parsing it once here
means the widgets draw typed values, a malformed report becomes one clear `ReportError` instead
of a KeyError deep inside a widget, and the table rows and totals line can be tested without a
screen. Nothing is computed that the engine already computed; only ratios for display.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from compaction.scrub import scrub

from app import format as fmt

BASELINE = "cc"        # the policy the others are compared with ("0.46× cc")
READ_ERR, WRITE_ERR = "cache_read_error_pct", "cache_write_error_pct"


class ReportError(ValueError):
    """The report does not have the shape the screen needs."""


@dataclass(frozen=True)
class PolicyResult:
    """One policy replayed over one session."""
    name: str
    cost_usd: float | None
    cost_by_bucket: dict[str, float]
    compaction_cost_usd: float | None            # dollars of the compaction calls themselves, when told
    overflows: int | None
    compactions: dict[str, int]
    cache_hit_rate: float | None                 # 0..1
    user_messages: tuple[int | None, int | None]  # kept, total
    references: tuple[int | None, int | None]     # kept, total
    context: tuple[int, ...]                     # tokens sent, one per request
    cost_cum: tuple[float, ...]                  # cumulative dollars, one per request
    markers: tuple[tuple[int, str], ...]         # (0-based request index, layer) of each compaction


@dataclass(frozen=True)
class SessionResult:
    path: str
    model: str | None
    requests: int | None
    agent_id: str | None                 # a sub-agent's log: its id
    window: int | None                   # this session's window, when the report gives one per session
    skipped_lines: int | None
    cache_read_error_pct: float | None
    cache_write_error_pct: float | None
    policies: dict[str, PolicyResult]
    unexplained_misses: int = 0          # requests the log shows missing the cache for no recorded reason
    read_error_without_misses: float | None = None
    write_error_without_misses: float | None = None

    @property
    def label(self) -> str:
        """A short name for the session selector: the file's stem, cut to fit a tab."""
        return fmt.one_line(self.agent_id or Path(self.path).stem, 18) or "session"


@dataclass(frozen=True)
class ReplayResult:
    sessions: tuple[SessionResult, ...]
    totals: dict[str, tuple[float | None, int | None]]   # name -> (dollars, overflows)
    window: int | None
    ttl: str | None
    limits: tuple[str, ...]

    @property
    def policy_names(self) -> tuple[str, ...]:
        """Every policy in the order first seen, so colours stay the same across sessions."""
        names: dict[str, None] = dict.fromkeys(self.totals)
        for s in self.sessions:
            names.update(dict.fromkeys(s.policies))
        return tuple(names)


# ----- parsing ---------------------------------------------------------------------------------
def _mapping(value: object, where: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise ReportError(f"{where} should be an object, not {type(value).__name__}")
    return value


def _list(value: object, where: str) -> Sequence:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ReportError(f"{where} should be a list, not {type(value).__name__}")
    return value


def _number(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ReportError(f"{where} should be a number, not {value!r:.40}")
    return value


def _int(value: object, where: str) -> int | None:
    n = _number(value, where)
    return None if n is None else int(n)


def _numbers(value: object, where: str) -> tuple[float, ...]:
    return tuple(_number(v, f"{where}[{i}]") or 0 for i, v in enumerate(_list(value, where)))


def _policy(name: str, data: object, where: str) -> PolicyResult:
    d = _mapping(data, where)
    series = _mapping(d.get("series") or {}, f"{where}.series")
    markers = []
    for i, m in enumerate(_list(series.get("markers"), f"{where}.series.markers")):
        m = _list(m, f"{where}.series.markers[{i}]")
        if len(m) < 2:
            raise ReportError(f"{where}.series.markers[{i}] should be [request_index, layer, ...]")
        markers.append((_int(m[0], f"{where}.series.markers[{i}][0]") or 0, str(m[1])))
    buckets = _mapping(d.get("cost_by_bucket") or {}, f"{where}.cost_by_bucket")
    layers = _mapping(d.get("compactions") or {}, f"{where}.compactions")
    return PolicyResult(
        name=name,
        cost_usd=_number(d.get("cost_usd"), f"{where}.cost_usd"),
        cost_by_bucket={str(k): _number(v, f"{where}.cost_by_bucket.{k}") or 0.0 for k, v in buckets.items()},
        compaction_cost_usd=_number(d.get("compaction_cost_usd"), f"{where}.compaction_cost_usd"),
        overflows=_int(d.get("overflows"), f"{where}.overflows"),
        compactions={str(k): _int(v, f"{where}.compactions.{k}") or 0 for k, v in layers.items()},
        cache_hit_rate=_number(d.get("cache_hit_rate"), f"{where}.cache_hit_rate"),
        user_messages=(_int(d.get("user_messages_kept"), f"{where}.user_messages_kept"),
                       _int(d.get("user_messages_total"), f"{where}.user_messages_total")),
        references=(_int(d.get("references_kept"), f"{where}.references_kept"),
                    _int(d.get("references_total"), f"{where}.references_total")),
        context=tuple(int(v) for v in _numbers(series.get("context"), f"{where}.series.context")),
        cost_cum=_numbers(series.get("cost_cum"), f"{where}.series.cost_cum"),
        markers=tuple(markers),
    )


def _session(data: object, where: str) -> SessionResult:
    d = _mapping(data, where)
    validation = _mapping(d.get("validation") or {}, f"{where}.validation")
    policies = _mapping(d.get("policies") or {}, f"{where}.policies")
    model, agent = d.get("model"), d.get("agent_id")
    return SessionResult(
        path=str(d.get("path") or "?"),
        model=None if model is None else str(model),
        requests=_int(d.get("requests"), f"{where}.requests"),
        agent_id=str(agent) if agent else None,
        window=_int(d.get("window"), f"{where}.window"),
        skipped_lines=_int(d.get("skipped_lines"), f"{where}.skipped_lines"),
        cache_read_error_pct=_number(validation.get(READ_ERR), f"{where}.validation.{READ_ERR}"),
        cache_write_error_pct=_number(validation.get(WRITE_ERR), f"{where}.validation.{WRITE_ERR}"),
        policies={str(k): _policy(str(k), v, f"{where}.policies.{k}") for k, v in policies.items()},
        unexplained_misses=len(_list(validation.get("unexplained_misses") or [],
                                     f"{where}.validation.unexplained_misses")),
        read_error_without_misses=_number(validation.get(READ_ERR + "_without_misses"),
                                          f"{where}.validation.{READ_ERR}_without_misses"),
        write_error_without_misses=_number(validation.get(WRITE_ERR + "_without_misses"),
                                           f"{where}.validation.{WRITE_ERR}_without_misses"),
    )


def parse_report(data: object) -> ReplayResult:
    """The engine's report dict as dataclasses; `ReportError` naming the first bad field."""
    d = _mapping(data, "the report")
    if "sessions" not in d:
        raise ReportError("the report has no 'sessions'")
    sessions = tuple(_session(s, f"sessions[{i}]") for i, s in enumerate(_list(d["sessions"], "sessions")))
    totals = {}
    for name, t in _mapping(d.get("totals") or {}, "totals").items():
        t = _mapping(t, f"totals.{name}")
        totals[str(name)] = (_number(t.get("cost_usd"), f"totals.{name}.cost_usd"),
                             _int(t.get("overflows"), f"totals.{name}.overflows"))
    ttl = d.get("ttl")
    return ReplayResult(sessions=sessions, totals=totals, window=_int(d.get("window"), "window"),
                        ttl=None if ttl is None else str(ttl),
                        limits=tuple(str(x) for x in _list(d.get("limits"), "limits")))


# ----- what the screen shows ---------------------------------------------------------------------
def ratio(cost: float | None, base: float | None) -> str:
    """"0.46×" of the baseline's dollars, or "—" when either is unknown or the base is zero."""
    if cost is None or not base:
        return "—"
    return f"{cost / base:.2f}×"


def kept(pair: tuple[int | None, int | None]) -> str:
    k, n = pair
    if n is None:
        return "—"
    return f"{'?' if k is None else k}/{n}"


def hit_rate(rate: float | None) -> str:
    return "—" if rate is None else fmt.percent(rate * 100, 1)


def table_rows(session: SessionResult) -> list[tuple[str, list[str]]]:
    """The policy table, one row per figure and one column per policy (so three policies fit
    in 80 columns): dollars total and by bucket, the ratio to `cc`, overflows, compactions by
    layer, cache hit rate, user messages and references kept."""
    pols = list(session.policies.values())
    base = session.policies.get(BASELINE)
    buckets = list(dict.fromkeys(b for p in pols for b in p.cost_by_bucket))
    layers = sorted({layer for p in pols for layer in p.compactions})
    rows: list[tuple[str, list[str]]] = [("$ total", [fmt.usd(p.cost_usd) for p in pols])]
    rows += [(f"  $ {b}", [fmt.usd(p.cost_by_bucket.get(b, 0.0)) for p in pols]) for b in buckets]
    if any(p.compaction_cost_usd is not None for p in pols):
        rows.append(("  of which compaction", [fmt.usd(p.compaction_cost_usd) for p in pols]))
    if base is not None:
        rows.append((f"vs {BASELINE}", [ratio(p.cost_usd, base.cost_usd) for p in pols]))
    rows.append(("overflows", [fmt.tokens(p.overflows) for p in pols]))
    if layers:
        rows += [(f"compactions: {layer}", [str(p.compactions.get(layer, 0)) for p in pols]) for layer in layers]
    else:
        rows.append(("compactions", ["0" for _ in pols]))
    rows += [("cache hit rate", [hit_rate(p.cache_hit_rate) for p in pols]),
             ("user msgs kept", [kept(p.user_messages) for p in pols]),
             ("references kept", [kept(p.references) for p in pols])]
    return rows


def totals_parts(result: ReplayResult) -> list[tuple[str, str]]:
    """(policy, "$2.44 · 0 overflows · 0.54× cc") for the header, in policy order."""
    base = result.totals.get(BASELINE, (None, None))[0]
    parts = []
    for name, (cost, overflows) in result.totals.items():
        text = fmt.usd(cost)
        if overflows is not None:
            text += f" · {overflows} overflow{'' if overflows == 1 else 's'}"
        if name != BASELINE and base:
            text += f" · {ratio(cost, base)} {BASELINE}"
        parts.append((name, text))
    return parts


def validation_text(session: SessionResult) -> str:
    """How close the simulator came to the log's own cache figures, or why there is none."""
    r, w = session.cache_read_error_pct, session.cache_write_error_pct
    if r is None and w is None:
        return "validation: the log records no cache usage to compare with"
    text = (f"validation: replayed cache reads within {fmt.percent(r, 1)}, writes within "
            f"{fmt.percent(w, 1)} of the log")
    if session.unexplained_misses:
        text += (f"; {session.unexplained_misses} request(s) missed the cache for a reason the log does not "
                 f"record — without them {fmt.percent(session.read_error_without_misses, 1)} / "
                 f"{fmt.percent(session.write_error_without_misses, 1)}")
    return text


# ----- failures ----------------------------------------------------------------------------------
def describe_failure(error: BaseException) -> tuple[str, str]:
    """(what went wrong, what to do) for a loader error: no traceback, secrets scrubbed."""
    if isinstance(error, FileNotFoundError):
        what = f"{error.filename or error} does not exist"
        todo = "Check the path: ctxtui replay reads .jsonl session logs, or folders holding them."
    elif isinstance(error, PermissionError):
        what = f"cannot read {error.filename or error}: permission denied"
        todo = "Give your user read access to the log, or copy it somewhere readable."
    elif isinstance(error, OSError):
        what = str(error)
        todo = "Check the path and that the disk is readable, then run ctxtui replay again."
    elif isinstance(error, ReportError):
        what = f"the replay report could not be read: {error}"
        todo = "Run ctxtui replay --json to see the report as text, and report this as a bug."
    elif isinstance(error, MemoryError):
        what = "the logs do not fit in memory"
        todo = "Replay fewer logs at a time."
    elif isinstance(error, ValueError):
        what = str(error) or type(error).__name__
        todo = "Check the logs and options (ctxtui replay --help lists them)."
    else:
        what = f"{type(error).__name__}: {error}"
        todo = "This is a bug in ctxtui replay: run it with --json to get the same error as text, and report it."
    return scrub(what), todo
