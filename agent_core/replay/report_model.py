"""The replay report as data: what `run_replay` returns, the replay screen draws and `--json` prints.

    ReplayReport(sessions=(SessionResult(path, model, ..., validation=CacheCheck(...),
                 policies={NAME: PolicyResult(cost_usd, ..., context, cost_cum, markers)}), ...),
                 totals={NAME: Total(cost_usd, overflows, net_cost_usd)}, window, ttl, limits,
                 skipped_files)

`to_json()` is the `--json` object (the shape is documented in app/cli/replay.py's epilog):

    {"sessions": [{"path", "model", "session_id", "agent_id", "source", "requests", "window",
      "skipped_lines", "summary_tokens", "summary_source", "validation": {"cache_read_error_pct",
      "cache_write_error_pct", ["misses": [{"request", "reason", "read", "expected"}],
      "cache_read_error_pct_without_misses", "cache_write_error_pct_without_misses"]},
      "cache_doctor": [{"request", "read", "expected", "short", "where", "why", "model"}],
      "policies": {NAME: {"cost_usd", "cost_by_bucket", "compaction_cost_usd", "tokens_by_bucket",
      "overflows", "compactions", "cache_hit_rate",
      "user_messages_kept", "user_messages_total", "references_kept", "references_total",
      "content_kept", "content_total", "rereads", "rereads_logged", "reread_usd", "net_cost_usd",
      "summary_calls", "refusals", "unpriced_models", "series": {"context", "cost_cum", "markers"}}},
      "logged_cost_usd", "recorded_cost_usd", "recorded_source", "claude_code_cost_usd"}],
     "totals": {NAME: {"cost_usd", "overflows", "net_cost_usd"}}, "window", "ttl", "limits",
     "skipped_files": [{"path", "reason"}]}

`content_kept` / `content_total`: the uses of a file read earlier (the log names it again: a
prompt, an answer's text or tool inputs) whose content the context sent still carried
(replay/content.py); `rereads`: the others (`content_total - content_kept`), `rereads_logged` of
them the log's own re-reads (priced with its requests), `reread_usd` the dollars of the round trips
replay added for the rest, not in `cost_usd`; `net_cost_usd` is `cost_usd + reread_usd`, the
dollars net of re-reads, the policy's prediction (derived: `from_json` does not read it, it
recomputes it). `summary_calls`: the policy's summary calls, priced in `cost_usd`; `refusals`: the
requests a reactive policy (cc-reactive) sent over the window, refused and sent again after its
reactive compaction.
`recorded_cost_usd`: what the log says the session paid (replay/recorded.py: a Claude Code log's
cost-state usage at ctxtui's rates when it has one — `recorded_source` "cost-state", Claude Code's
own figure in `claude_code_cost_usd` — else its requests, "requests"; a sub-agent inside its main
log's cost-state: None, "main-cost-state").

`ReplayReport.from_json` reads that object back (a saved `--json` report, the screen's test
fixtures): a malformed one is one `ReportError` naming the first bad field. A figure a partial
report leaves out is None (a report saved before content kept and re-reads: those four, and so
the net dollars, are None). No Textual, no formatting: the screen's words live in app/replay/.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from compaction.accounting.cache_doctor import CacheMiss as DoctorMiss


class ReportError(ValueError):
    """The report does not have the shape of `ReplayReport.to_json()`."""


class Marker(NamedTuple):
    """A compaction on a policy's line: before which request (0-based) and by which layer."""
    request: int
    layer: str


class Total(NamedTuple):
    """One policy over every session. `net_cost_usd`: with the re-reads charged (None when a
    session has no re-read figure: a report saved before them)."""
    cost_usd: float | None
    overflows: int | None
    net_cost_usd: float | None = None


class CacheMiss(NamedTuple):
    """A request the log shows missing the cache: its index, why (replay/cache_misses.py's
    REASONS), the tokens it read and the tokens it would have read had nothing but its content
    mattered."""
    request: int
    reason: str
    read: int
    expected: int


class SkippedFile(NamedTuple):
    """A log that could not be read, and why ("Permission denied")."""
    path: str
    reason: str


@dataclass(frozen=True)
class PolicyResult:
    """One policy replayed over one session."""
    cost_usd: float | None
    cost_by_bucket: dict[str, float]
    compaction_cost_usd: float | None            # dollars of the compaction calls themselves
    tokens_by_bucket: dict[str, int]
    overflows: int | None                        # requests over the window
    compactions: dict[str, int]                  # layer -> times it acted
    cache_hit_rate: float | None                 # 0..1
    user_messages_kept: int | None
    user_messages_total: int | None
    references_kept: int | None
    references_total: int | None
    unpriced_models: tuple[str, ...] = ()
    context: tuple[int, ...] = ()                # tokens sent, one per request
    cost_cum: tuple[float, ...] = ()             # cumulative dollars, one per request
    markers: tuple[Marker, ...] = ()
    content_kept: int | None = None              # uses of a file read earlier whose content was still sent
    content_total: int | None = None
    rereads: int | None = None                   # uses of lost content: each a re-read
    reread_usd: float | None = None              # the dollars of the re-reads replay added, not in cost_usd
    rereads_logged: int | None = None            # of the re-reads, the log's own (priced as recorded)
    summary_calls: int | None = None             # the policy's summary calls (in cost_usd)
    refusals: int | None = None                  # requests refused as too long first (a reactive policy)

    @property
    def net_cost_usd(self) -> float | None:
        """The dollars net of re-reads: `cost_usd + reread_usd` (None when either is unknown)."""
        if self.cost_usd is None or self.reread_usd is None:
            return None
        return round(self.cost_usd + self.reread_usd, 6)

    def to_json(self) -> dict[str, Any]:
        return {
            "cost_usd": self.cost_usd,
            "cost_by_bucket": dict(self.cost_by_bucket),
            "compaction_cost_usd": self.compaction_cost_usd,
            "tokens_by_bucket": dict(self.tokens_by_bucket),
            "overflows": self.overflows,
            "compactions": dict(self.compactions),
            "cache_hit_rate": self.cache_hit_rate,
            "user_messages_kept": self.user_messages_kept,
            "user_messages_total": self.user_messages_total,
            "references_kept": self.references_kept,
            "references_total": self.references_total,
            "content_kept": self.content_kept,
            "content_total": self.content_total,
            "rereads": self.rereads,
            "rereads_logged": self.rereads_logged,
            "reread_usd": self.reread_usd,
            "net_cost_usd": self.net_cost_usd,
            "summary_calls": self.summary_calls,
            "refusals": self.refusals,
            "unpriced_models": list(self.unpriced_models),
            "series": {"context": list(self.context), "cost_cum": list(self.cost_cum),
                       "markers": [list(m) for m in self.markers]},
        }


@dataclass(frozen=True)
class CacheCheck:
    """The cache simulator against the log's own cache reads and writes (validate.py), in percent.
    `misses` is None when nothing was checked beyond the two figures (a synthetic trajectory has
    nothing logged: both None); the `_without_misses` figures leave the listed misses out."""
    cache_read_error_pct: float | None = None
    cache_write_error_pct: float | None = None
    misses: tuple[CacheMiss, ...] | None = None
    cache_read_error_pct_without_misses: float | None = None
    cache_write_error_pct_without_misses: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cache_read_error_pct": self.cache_read_error_pct,
                               "cache_write_error_pct": self.cache_write_error_pct}
        if self.misses is not None:
            out.update({"misses": [m._asdict() for m in self.misses],
                        "cache_read_error_pct_without_misses": self.cache_read_error_pct_without_misses,
                        "cache_write_error_pct_without_misses": self.cache_write_error_pct_without_misses})
        return out


@dataclass(frozen=True)
class SessionResult:
    """One trajectory (a main session or a sub-agent's log) under every policy."""
    path: str
    model: str | None = None
    session_id: str | None = None
    agent_id: str | None = None                  # a sub-agent's log: its id
    source: str | None = None                    # claude_code | ctxtui | synthetic
    requests: int | None = None
    window: int | None = None                    # the window this session was replayed at
    skipped_lines: int | None = None
    summary_tokens: int | None = None
    summary_source: str | None = None
    validation: CacheCheck = field(default_factory=CacheCheck)
    # the requests that read short of what the one before left, where and why (cache_doctor_log.py)
    cache_doctor: tuple[DoctorMiss, ...] = ()
    policies: dict[str, PolicyResult] = field(default_factory=dict)
    # what the log's own requests (summary calls included) cost at their dates' prices: the figure
    # `usage`, `watch` and the TUI show for the same log; None when a model has no price
    logged_cost_usd: float | None = None
    # what the log says the session paid (replay/recorded.py) and where that comes from
    recorded_cost_usd: float | None = None
    recorded_source: str | None = None           # cost-state | main-cost-state | requests
    claude_code_cost_usd: float | None = None    # a cost-state's own totalCostUSD

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "model": self.model, "session_id": self.session_id, "agent_id": self.agent_id,
                "source": self.source, "requests": self.requests, "window": self.window,
                "skipped_lines": self.skipped_lines, "summary_tokens": self.summary_tokens,
                "summary_source": self.summary_source, "logged_cost_usd": self.logged_cost_usd,
                "recorded_cost_usd": self.recorded_cost_usd, "recorded_source": self.recorded_source,
                "claude_code_cost_usd": self.claude_code_cost_usd,
                "validation": self.validation.to_json(),
                "cache_doctor": [m.to_dict() for m in self.cache_doctor],
                "policies": {name: p.to_json() for name, p in self.policies.items()}}


@dataclass(frozen=True)
class ReplayReport:
    sessions: tuple[SessionResult, ...]
    totals: dict[str, Total]
    window: int | None                           # the window asked for (None: each log's model's)
    ttl: str | None
    limits: tuple[str, ...]
    skipped_files: tuple[SkippedFile, ...] = ()

    @property
    def policy_names(self) -> tuple[str, ...]:
        """Every policy in the order first seen, so colours stay the same across sessions."""
        names: dict[str, None] = dict.fromkeys(self.totals)
        for s in self.sessions:
            names.update(dict.fromkeys(s.policies))
        return tuple(names)

    def to_json(self) -> dict[str, Any]:
        """The `--json` object (module docstring)."""
        return {"sessions": [s.to_json() for s in self.sessions],
                "totals": {name: {"cost_usd": t.cost_usd, "overflows": t.overflows, "net_cost_usd": t.net_cost_usd}
                           for name, t in self.totals.items()},
                "window": self.window, "ttl": self.ttl, "limits": list(self.limits),
                "skipped_files": [{"path": f.path, "reason": f.reason} for f in self.skipped_files]}

    @classmethod
    def from_json(cls, data: object) -> ReplayReport:
        """`to_json()`'s object read back; `ReportError` naming the first bad field."""
        d = _mapping(data, "the report")
        if "sessions" not in d:
            raise ReportError("the report has no 'sessions'")
        sessions = tuple(_session(s, f"sessions[{i}]") for i, s in enumerate(_list(d["sessions"], "sessions")))
        totals = {}
        for name, t in _mapping(d.get("totals") or {}, "totals").items():
            t = _mapping(t, f"totals.{name}")
            totals[str(name)] = Total(_number(t.get("cost_usd"), f"totals.{name}.cost_usd"),
                                      _int(t.get("overflows"), f"totals.{name}.overflows"),
                                      _number(t.get("net_cost_usd"), f"totals.{name}.net_cost_usd"))
        skipped = []
        for i, f in enumerate(_list(d.get("skipped_files"), "skipped_files")):
            f = _mapping(f, f"skipped_files[{i}]")
            skipped.append(SkippedFile(str(f.get("path") or "?"), str(f.get("reason") or "")))
        return cls(sessions=sessions, totals=totals, window=_int(d.get("window"), "window"),
                   ttl=_str(d.get("ttl")), limits=tuple(str(x) for x in _list(d.get("limits"), "limits")),
                   skipped_files=tuple(skipped))


# ----- reading the JSON form -----------------------------------------------------------------------
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


def _str(value: object) -> str | None:
    return None if value is None else str(value)


def _numbers(value: object, where: str) -> tuple[float, ...]:
    """A list of numbers, a missing one (null) read as 0."""
    out = []
    for i, v in enumerate(_list(value, where)):
        n = _number(v, f"{where}[{i}]")
        out.append(0 if n is None else n)
    return tuple(out)


def _markers(value: object, where: str) -> tuple[Marker, ...]:
    markers = []
    for i, m in enumerate(_list(value, where)):
        m = _list(m, f"{where}[{i}]")
        if len(m) < 2:
            raise ReportError(f"{where}[{i}] should be [request_index, layer, ...]")
        markers.append(Marker(_int(m[0], f"{where}[{i}][0]") or 0, str(m[1])))
    return tuple(markers)


def _counts(value: object, where: str) -> dict[str, int]:
    return {str(k): _int(v, f"{where}.{k}") or 0 for k, v in _mapping(value or {}, where).items()}


def _policy(data: object, where: str) -> PolicyResult:
    d = _mapping(data, where)
    series = _mapping(d.get("series") or {}, f"{where}.series")
    buckets = _mapping(d.get("cost_by_bucket") or {}, f"{where}.cost_by_bucket")
    return PolicyResult(
        cost_usd=_number(d.get("cost_usd"), f"{where}.cost_usd"),
        cost_by_bucket={str(k): _number(v, f"{where}.cost_by_bucket.{k}") or 0.0 for k, v in buckets.items()},
        compaction_cost_usd=_number(d.get("compaction_cost_usd"), f"{where}.compaction_cost_usd"),
        tokens_by_bucket=_counts(d.get("tokens_by_bucket"), f"{where}.tokens_by_bucket"),
        overflows=_int(d.get("overflows"), f"{where}.overflows"),
        compactions=_counts(d.get("compactions"), f"{where}.compactions"),
        cache_hit_rate=_number(d.get("cache_hit_rate"), f"{where}.cache_hit_rate"),
        user_messages_kept=_int(d.get("user_messages_kept"), f"{where}.user_messages_kept"),
        user_messages_total=_int(d.get("user_messages_total"), f"{where}.user_messages_total"),
        references_kept=_int(d.get("references_kept"), f"{where}.references_kept"),
        references_total=_int(d.get("references_total"), f"{where}.references_total"),
        content_kept=_int(d.get("content_kept"), f"{where}.content_kept"),
        content_total=_int(d.get("content_total"), f"{where}.content_total"),
        rereads=_int(d.get("rereads"), f"{where}.rereads"),
        rereads_logged=_int(d.get("rereads_logged"), f"{where}.rereads_logged"),
        reread_usd=_number(d.get("reread_usd"), f"{where}.reread_usd"),
        summary_calls=_int(d.get("summary_calls"), f"{where}.summary_calls"),
        refusals=_int(d.get("refusals"), f"{where}.refusals"),
        unpriced_models=tuple(str(m) for m in _list(d.get("unpriced_models"), f"{where}.unpriced_models")),
        context=tuple(int(v) for v in _numbers(series.get("context"), f"{where}.series.context")),
        cost_cum=_numbers(series.get("cost_cum"), f"{where}.series.cost_cum"),
        markers=_markers(series.get("markers"), f"{where}.series.markers"),
    )


def _check(data: object, where: str) -> CacheCheck:
    v = _mapping(data or {}, where)
    return CacheCheck(
        cache_read_error_pct=_number(v.get("cache_read_error_pct"), f"{where}.cache_read_error_pct"),
        cache_write_error_pct=_number(v.get("cache_write_error_pct"), f"{where}.cache_write_error_pct"),
        misses=_misses(v, where),
        cache_read_error_pct_without_misses=_number(v.get("cache_read_error_pct_without_misses"),
                                                    f"{where}.cache_read_error_pct_without_misses"),
        cache_write_error_pct_without_misses=_number(v.get("cache_write_error_pct_without_misses"),
                                                     f"{where}.cache_write_error_pct_without_misses"),
    )


def _misses(v: Mapping[str, Any], where: str) -> tuple[CacheMiss, ...] | None:
    """`misses`; a report saved before misses had reasons lists `unexplained_misses` (indexes)."""
    if v.get("misses") is None and v.get("unexplained_misses") is not None:
        old = _list(v["unexplained_misses"], f"{where}.unexplained_misses")
        return tuple(CacheMiss(_int(i, f"{where}.unexplained_misses[{n}]") or 0, "unknown", 0, 0)
                     for n, i in enumerate(old))
    if v.get("misses") is None:
        return None
    out = []
    for n, m in enumerate(_list(v["misses"], f"{where}.misses")):
        at = f"{where}.misses[{n}]"
        d = _mapping(m, at)
        out.append(CacheMiss(_int(d.get("request"), f"{at}.request") or 0, str(d.get("reason") or "unknown"),
                             _int(d.get("read"), f"{at}.read") or 0, _int(d.get("expected"), f"{at}.expected") or 0))
    return tuple(out)


def _doctor(data: object, where: str) -> tuple[DoctorMiss, ...]:
    """`cache_doctor` (absent in a report saved before it: none)."""
    out = []
    for n, m in enumerate(_list(data or [], where)):
        at = f"{where}[{n}]"
        d = _mapping(m, at)
        why = d.get("why")
        out.append(DoctorMiss(_int(d.get("request"), f"{at}.request") or 0, _int(d.get("read"), f"{at}.read") or 0,
                              _int(d.get("expected"), f"{at}.expected") or 0, _str(d.get("where")) or "",
                              str(why) if isinstance(why, str) and why else None, _str(d.get("model")) or ""))
    return tuple(out)


def _session(data: object, where: str) -> SessionResult:
    d = _mapping(data, where)
    policies = _mapping(d.get("policies") or {}, f"{where}.policies")
    agent = d.get("agent_id")
    return SessionResult(
        path=str(d.get("path") or "?"),
        model=_str(d.get("model")),
        session_id=_str(d.get("session_id")),
        agent_id=str(agent) if agent else None,
        source=_str(d.get("source")),
        requests=_int(d.get("requests"), f"{where}.requests"),
        window=_int(d.get("window"), f"{where}.window"),
        skipped_lines=_int(d.get("skipped_lines"), f"{where}.skipped_lines"),
        summary_tokens=_int(d.get("summary_tokens"), f"{where}.summary_tokens"),
        summary_source=_str(d.get("summary_source")),
        logged_cost_usd=_number(d.get("logged_cost_usd"), f"{where}.logged_cost_usd"),
        recorded_cost_usd=_number(d.get("recorded_cost_usd"), f"{where}.recorded_cost_usd"),
        recorded_source=_str(d.get("recorded_source")),
        claude_code_cost_usd=_number(d.get("claude_code_cost_usd"), f"{where}.claude_code_cost_usd"),
        validation=_check(d.get("validation"), f"{where}.validation"),
        cache_doctor=_doctor(d.get("cache_doctor"), f"{where}.cache_doctor"),
        policies={str(k): _policy(v, f"{where}.policies.{k}") for k, v in policies.items()},
    )
