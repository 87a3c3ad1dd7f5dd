"""The replay report built from the runs (report_model.py holds its dataclasses and their JSON
form) and its compact text form, the table `ctxtui replay` prints without --json.
"""
from __future__ import annotations

from typing import Sequence, TypeVar

from compaction.accounting.cache_doctor import CacheMiss as DoctorMiss

from agent_core.logs.trajectory import Trajectory
from agent_core.pricing.cost import shown_price
from agent_core.pricing.pricer import PriceFn
from agent_core.replay.report_model import (CacheCheck, CacheMiss, Marker, PolicyResult, ReplayReport, SessionResult,
                                            Total)
from agent_core.replay.recorded import REQUESTS, Recorded
from agent_core.replay.simulate import PolicyRun
from agent_core.replay.summary_size import SummarySize
from agent_core.security.visible_text import one_line

LIMITS = [
    "Replay cannot see how behaviour would change: after another compaction the model might re-read files, "
    "ask again or work longer; every policy replays the recorded requests and answers as they were.",
    "Summaries are sized, not written: a replayed summary holds the user's messages and the paths of the files "
    "touched (what Claude Code's summary prompt asks for and replay can know), then filler; no file content, so "
    "content kept after a summary counts only what stayed verbatim or was re-attached.",
    "Re-reads: each time the log refers again to a file read earlier (a prompt or an answer names it) whose "
    "content the policy's context no longer carries (a cleared or summarized read result), the agent reads it "
    "again: one more round trip (the context read from the cache, the call and the file written, a 100-token "
    "call) in the dollars net of re-reads, and the file stays in the context from then on. A re-read the log "
    "itself made is priced as recorded, also under a policy that would have kept the file.",
    "Snip never acts in replay (it archives a transcript first, and replay writes none); in a session it acts "
    "only when automatic summarizing cannot run.",
    "Every policy but none runs the engine under its preset (compaction/presets.py, the same as --policy in a "
    "session): cc is the tool-result budget, the 60-minute clear of old tool results and the LLM summary at "
    "Claude Code's threshold with 5 re-attached files.",
]


def _r(x: float, n: int = 6) -> float:
    return round(float(x), n)


def policy_result(run: PolicyRun) -> PolicyResult:
    """One policy's run as the report states it: dollars to 6 places, the hit rate to 4."""
    return PolicyResult(
        cost_usd=_r(run.cost_usd),
        cost_by_bucket={k: _r(v) for k, v in run.cost_by_bucket.items()},
        compaction_cost_usd=_r(run.compaction_cost_usd),
        tokens_by_bucket=dict(run.tokens_by_bucket),
        overflows=run.overflows,
        compactions=dict(sorted(run.compactions.items())),
        cache_hit_rate=_r(run.cache_hit_rate, 4),
        user_messages_kept=run.user_messages_kept,
        user_messages_total=run.user_messages_total,
        references_kept=run.references_kept,
        references_total=run.references_total,
        content_kept=run.content_kept,
        content_total=run.content_total,
        rereads=run.rereads,
        rereads_logged=run.rereads_logged,
        reread_usd=_r(run.reread_usd),
        summary_calls=run.summary_calls,
        refusals=run.refusals,
        unpriced_models=tuple(sorted(run.unpriced_models)),
        context=tuple(run.context),
        cost_cum=tuple(_r(c) for c in run.cost_cum),
        markers=tuple(Marker(index, layer) for index, layer in run.markers),
    )


def logged_cost(traj: Trajectory, price: PriceFn = shown_price) -> float | None:
    """The log's own requests and summary calls at the prices of their dates, by the pricer
    `usage` uses (so the same file gives the same dollars); None when one has no price."""
    total = 0.0
    for r in (*traj.requests, *traj.compaction_calls):
        usd = price(r.model, r.usage, r.timestamp or None)
        if usd is None:
            return None
        total += usd
    return total


_UNSET = object()


def session_result(traj: Trajectory, runs: dict[str, PolicyRun], *, window: int, size: SummarySize,
                   validation: CacheCheck, price: PriceFn = shown_price,
                   cache_doctor: tuple[DoctorMiss, ...] = (), logged: float | None | object = _UNSET,
                   recorded: Recorded | None = None) -> SessionResult:
    """One trajectory's result. `logged`: its `logged_cost` when already known; `recorded`: what
    the log says the session paid (recorded.py; without it, the logged dollars)."""
    own = logged_cost(traj, price) if logged is _UNSET else logged
    assert own is None or isinstance(own, float)
    rec = recorded if recorded is not None else Recorded(own, REQUESTS)
    return SessionResult(
        path=traj.path, model=traj.model, session_id=traj.session_id, agent_id=traj.agent_id,
        source=traj.source, requests=len(traj.requests), window=window,
        skipped_lines=traj.skipped_lines, summary_tokens=size.tokens, summary_source=size.source,
        validation=validation, logged_cost_usd=own, cache_doctor=cache_doctor,
        policies={name: policy_result(run) for name, run in runs.items()},
        recorded_cost_usd=None if rec.usd is None else _r(rec.usd), recorded_source=rec.source,
        claude_code_cost_usd=rec.claude_code_usd,
    )


def build_report(sessions: list[SessionResult], names: list[str], *, window: int | None, ttl: str,
                 notes: list[str], skipped_files: tuple = ()) -> ReplayReport:
    """The report over `sessions`, with each policy's totals and the limits (LIMITS, then `notes`)."""
    totals = {n: Total(_rounded(_known_sum([s.policies[n].cost_usd for s in sessions])),
                       _known_sum([s.policies[n].overflows for s in sessions]),
                       net_total([s.policies[n] for s in sessions])) for n in names}
    return ReplayReport(sessions=tuple(sessions), totals=totals, window=window, ttl=ttl,
                        limits=tuple(LIMITS + notes), skipped_files=tuple(skipped_files))


N = TypeVar("N", int, float)


def _known_sum(values: Sequence[N | None]) -> N | None:
    """The sum, None when one of the values is unknown (a result read from an older report)."""
    known = [v for v in values if v is not None]
    return sum(known) if len(known) == len(values) else None


def _rounded(x: float | None) -> float | None:
    return None if x is None else _r(x)


def net_total(policies: Sequence[PolicyResult]) -> float | None:
    """Σ dollars net of re-reads, None when one of them has no re-read figure."""
    return _rounded(_known_sum([p.net_cost_usd for p in policies]))


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a is not None and b else "-"


def _usd(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def _known(x: int | None) -> str:
    return "-" if x is None else str(x)


def _percent(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.1f}"


def _pct(a: int | None, b: int | None) -> str:
    return f"{a}/{b}" if b and a is not None else "-"


def misses_text(misses: Sequence[CacheMiss]) -> str:
    """The misses grouped by reason: "first message block changed: requests 31, 149; TTL: request 7"."""
    by: dict[str, list[int]] = {}
    for m in misses:
        by.setdefault(m.reason, []).append(m.request)
    return "; ".join(f"{reason}: request{'s' if len(ix) > 1 else ''} {', '.join(str(i) for i in ix)}"
                     for reason, ix in by.items())


DOCTOR_LINES = 8        # the cache doctor's lines per session in the text report; the rest are counted


def doctor_lines(misses: Sequence[DoctorMiss], limit: int = DOCTOR_LINES,
                 prefix: str = "  cache doctor: ") -> list[str]:
    """The cache doctor's findings: one line per request that read short, the first `limit` of them."""
    lines = [f"{prefix}{m.text()}" for m in misses[:limit]]
    if len(misses) > limit:
        lines.append(f"{prefix}and {len(misses) - limit} more requests (--json lists every one)")
    return lines


def format_text(report: ReplayReport) -> str:
    """A compact table per session (under 100 columns), the totals and the limits: per policy its
    dollars and their ratio to cc, the dollars net of re-reads (`net $`: with each use of lost
    content charged a re-read) and their ratio to cc's, overflows, hit rate, user prompts,
    references and content kept, re-reads; its compactions on the line below. Paths, models,
    agent ids and notes come from the logs: every line passes through `one_line` (an escape
    sequence is shown, never obeyed) before it is wrapped."""
    lines: list[str] = []
    head = (f"  {'policy':<14}{'cost $':>9}{'÷cc':>6}{'net $':>9}{'net÷cc':>7}{'over':>5}{'hit%':>6}"
            f"{'users':>8}{'refs':>10}{'content':>10}{'reread':>7}")
    for s in report.sessions:
        v = s.validation
        valid = ("" if v.cache_read_error_pct is None else
                 f"; validation read {v.cache_read_error_pct:.1f}% write {v.cache_write_error_pct:.1f}%")
        if v.misses:
            valid += (f" ({len(v.misses)} cache misses; without them read "
                      f"{v.cache_read_error_pct_without_misses:.1f}% write "
                      f"{v.cache_write_error_pct_without_misses:.1f}%)")
        lines.append(f"{s.path}" + (f" [{s.agent_id}]" if s.agent_id else ""))
        logged = "" if s.logged_cost_usd is None else f", ${s.logged_cost_usd:.4f} as logged"
        if s.recorded_source == "cost-state" and s.recorded_cost_usd is not None:
            logged += f", ${s.recorded_cost_usd:.4f} recorded (cost-state)"
        lines.append(f"  {s.model}, {s.requests} requests{logged}, window {s.window:,}{valid}")
        if v.misses:
            lines.append(f"  cache misses: {misses_text(v.misses)}")
        lines += doctor_lines(s.cache_doctor)
        lines.append(head)
        cc = s.policies.get("cc")
        cc_cost, cc_net = (cc.cost_usd, cc.net_cost_usd) if cc is not None else (None, None)
        for name, p in s.policies.items():
            comp = ", ".join(f"{k} {n}" for k, n in p.compactions.items()) or "none"
            lines.append(f"  {name[:14]:<14}{_usd(p.cost_usd):>9}{_ratio(p.cost_usd, cc_cost):>6}"
                         f"{_usd(p.net_cost_usd):>9}{_ratio(p.net_cost_usd, cc_net):>7}"
                         f"{_known(p.overflows):>5}{_percent(p.cache_hit_rate):>6}"
                         f"{_pct(p.user_messages_kept, p.user_messages_total):>8}"
                         f"{_pct(p.references_kept, p.references_total):>10}"
                         f"{_pct(p.content_kept, p.content_total):>10}"
                         f"{'-' if p.rereads is None else p.rereads:>7}")
            lines.append(f"  {'':<14}compactions: {comp}")
        lines.append("")
    base = report.totals.get("cc")
    lines.append("totals: " + "; ".join(_total_text(n, t, base) for n, t in report.totals.items()))
    lines.append("")
    lines.append("limits:")
    for lim in report.limits:
        lines.append(f"  - {lim}")
    return "\n".join(_wrap(one_line(line)) for line in lines)


def _total_text(name: str, t: Total, base: Total | None) -> str:
    """"ctxtui $5.7012, 0 over, net of re-reads $6.1034 (0.58× cc)"."""
    text = f"{name} ${_usd(t.cost_usd)}, {t.overflows} over"
    if t.net_cost_usd is not None:
        text += f", net of re-reads ${t.net_cost_usd:.4f}"
        if base is not None and name != "cc" and base.net_cost_usd:
            text += f" ({t.net_cost_usd / base.net_cost_usd:.2f}× cc)"
    return text


def _wrap(line: str, width: int = 99) -> str:
    """A long line (paths, limits) wrapped at spaces, continued with its indent + 4; a word too long
    for a line keeps its end (a path's file name)."""
    if len(line) <= width:
        return line
    pad = len(line) - len(line.lstrip())
    indent = " " * (pad + 4)
    out, cur = [], " " * pad
    for word in line.split():
        room = width - len(indent) - 1
        if len(word) > room:
            word = "…" + word[-(room - 1):]
        if cur.strip() and len(cur) + 1 + len(word) > width:
            out.append(cur)
            cur = indent + word
        else:
            cur = f"{cur} {word}" if cur.strip() else cur + word
    out.append(cur)
    return "\n".join(out)
