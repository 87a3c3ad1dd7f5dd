"""A usage report's sums and records as plain values (tuples, lists, numbers, strings) and back:
what `report_cache` saves between runs, in marshal's format, so loading it runs no code."""
from __future__ import annotations

from agent_core.logs.records import CompactionRecord, UsageRecord
from agent_core.pricing.cost import BUCKETS
from agent_core.pricing.pricer import Priced
from agent_core.pricing.tally import Tally
from agent_core.usage.report import Mismatch, Response, SessionSummary, UsageReport


assert BUCKETS == ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read")   # usage_out's order


def usage_out(r: UsageRecord) -> tuple:
    get = r.buckets.get
    counts = (get("input", 0), get("output", 0), get("cache_write_5m", 0), get("cache_write_1h", 0),
              get("cache_read", 0))
    return (r.session_id, r.model, r.timestamp, r.request_key, counts, r.is_sidechain, r.context_tokens, r.source,
            r.path, r.agent_id, r.purpose, r.logged_usd)


def usage_in(t: tuple) -> UsageRecord:
    sid, model, ts, key, b, side, ctx, source, path, agent, purpose, logged = t
    return UsageRecord(sid, model, ts, key, dict(zip(BUCKETS, b)), side, ctx, source, path, agent, purpose, None,
                       logged)


def compaction_out(c: CompactionRecord) -> tuple:
    return tuple(getattr(c, n) for n in CompactionRecord.__slots__)


def compaction_in(t: tuple) -> CompactionRecord:
    return CompactionRecord(*t)


def tally_out(t: Tally) -> tuple:
    return (tuple(t.tokens[k] for k in BUCKETS), tuple(t.usd[k] for k in BUCKETS), t.cost, t.saved, t.requests,
            t.unpriced, t.unsplit, t.unsaved)


def tally_in(v: tuple) -> Tally:
    tokens, usd, cost, saved, requests, unpriced, unsplit, unsaved = v
    return Tally(dict(zip(BUCKETS, tokens)), dict(zip(BUCKETS, usd)), cost, saved, requests, unpriced, unsplit,
                 unsaved)


def session_out(s: SessionSummary) -> tuple:
    return (s.session_id, s.source, s.project, [(*cell, tally_out(t)) for cell, t in s.cells.items()],
            sorted(s.models), s.first, s.last, s.subagent_requests, s.last_context_tokens,
            [compaction_out(c) for c in s.compactions.values()], s.last_main)


def session_in(v: tuple) -> SessionSummary:
    sid, source, project, cells, models, first, last, sub, last_ctx, compactions, last_main = v
    s = SessionSummary(sid, source, project, {(m, d, p): tally_in(t) for m, d, p, t in cells}, set(models),
                       first, last, sub, last_ctx, last_main=last_main)
    for c in compactions:
        rec = compaction_in(c)
        s.compactions[rec.key] = rec
    return s


def report_state(report: UsageReport) -> dict:
    return {
        "sessions": [session_out(s) for s in report.sessions.values()],
        "responses": None if report.responses is None else [
            (k, r.timestamp, r.model, r.session_id, tuple(r.buckets.get(b, 0) for b in BUCKETS), r.priced.total)
            for k, r in report.responses.items()],
        "mismatches": None if report.mismatches is None else [
            (m.request_key, m.model, m.timestamp, m.logged_usd, m.calculated_usd, m.path)
            for m in report.mismatches.values()],
        "files": report.files,
        "skipped_lines": report.skipped_lines,
    }


def restore_report(report: UsageReport, state: dict) -> None:
    """Put a saved state's sums into a new report made with the same options."""
    report.sessions = {s.session_id: s for s in map(session_in, state["sessions"])}
    if report.responses is not None:
        report.responses = {k: Response(ts, model, sid, dict(zip(BUCKETS, b)), Priced(usd, None, None))
                            for k, ts, model, sid, b, usd in state["responses"]}
    if report.mismatches is not None:
        report.mismatches = {m[0]: Mismatch(*m) for m in state["mismatches"]}
    report.files = int(state["files"])
    report.skipped_lines = int(state["skipped_lines"])
