"""The words and rows the `ctxtui replay` screen shows for the engine's report.

The engine (`agent_core.replay`) hands back a `ReplayReport` (agent_core/replay/report_model.py);
the widgets draw its values. Nothing is computed here that the engine already computed: only
ratios and text for display, testable without a screen.
"""
from __future__ import annotations

from pathlib import Path

from compaction.scrub import scrub

from agent_core.replay.report import misses_text
from agent_core.replay.report_model import ReplayReport, ReportError, SessionResult

from app import format as fmt

BASELINE = "cc"        # the policy the others are compared with ("0.46× cc")


def session_label(session: SessionResult) -> str:
    """A short name for the session selector: the file's stem, cut to fit a tab."""
    return fmt.one_line(session.agent_id or Path(session.path).stem, 18) or "session"


# ----- what the screen shows ---------------------------------------------------------------------
def ratio(cost: float | None, base: float | None) -> str:
    """"0.46×" of the baseline's dollars, or "—" when either is unknown or the base is zero."""
    if cost is None or not base:
        return "—"
    return f"{cost / base:.2f}×"


def kept(k: int | None, n: int | None) -> str:
    """"3/5" kept of all, "—" when the total is unknown."""
    if n is None:
        return "—"
    return f"{'?' if k is None else k}/{n}"


def hit_rate(rate: float | None) -> str:
    return "—" if rate is None else fmt.percent(rate * 100, 1)


def table_rows(session: SessionResult) -> list[tuple[str, list[str]]]:
    """The policy table, one row per figure and one column per policy (so three policies fit
    in 80 columns): dollars total and by bucket, the ratio to `cc`, the dollars net of re-reads
    (with each use of lost content charged a re-read) and their ratio to `cc`'s, overflows,
    compactions by layer, cache hit rate, user messages, references and content kept, re-reads (the
    log's own among them) and summary calls."""
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
    if any(p.reread_usd is not None for p in pols):
        rows.append(("$ net of re-reads", [fmt.usd(p.net_cost_usd) for p in pols]))
        rows.append(("  of which re-reads", [fmt.usd(p.reread_usd) for p in pols]))
        if base is not None:
            rows.append((f"vs {BASELINE}, net", [ratio(p.net_cost_usd, base.net_cost_usd) for p in pols]))
    rows.append(("overflows", [fmt.tokens(p.overflows) for p in pols]))
    if layers:
        rows += [(f"compactions: {layer}", [str(p.compactions.get(layer, 0)) for p in pols]) for layer in layers]
    else:
        rows.append(("compactions", ["0" for _ in pols]))
    rows += [("cache hit rate", [hit_rate(p.cache_hit_rate) for p in pols]),
             ("user msgs kept", [kept(p.user_messages_kept, p.user_messages_total) for p in pols]),
             ("references kept", [kept(p.references_kept, p.references_total) for p in pols])]
    if any(p.content_total is not None for p in pols):
        rows.append(("content kept", [kept(p.content_kept, p.content_total) for p in pols]))
    if any(p.rereads is not None for p in pols):
        rows.append(("re-reads", ["—" if p.rereads is None else fmt.tokens(p.rereads) for p in pols]))
    if any(p.rereads_logged is not None for p in pols):
        rows.append(("  of which the log's", ["—" if p.rereads_logged is None else fmt.tokens(p.rereads_logged)
                                              for p in pols]))
    if any(p.summary_calls is not None for p in pols):
        rows.append(("summary calls", ["—" if p.summary_calls is None else fmt.tokens(p.summary_calls) for p in pols]))
    if any(p.refusals for p in pols):
        rows.append(("refused as too long", ["—" if p.refusals is None else fmt.tokens(p.refusals) for p in pols]))
    return rows


def recorded_text(session: SessionResult) -> str | None:
    """What the log says the session paid, and where that figure comes from (None: not known)."""
    usd, source = session.recorded_cost_usd, session.recorded_source
    if source == "main-cost-state":
        return "recorded: in the main log's cost-state record (its sub-agents' calls included)"
    if usd is None:
        return None
    if source == "cost-state":
        text = f"recorded: {fmt.usd(usd)} from Claude Code's cost-state record (every call, compactions included)"
        if session.logged_cost_usd is not None:
            text += f"; its requests as logged {fmt.usd(session.logged_cost_usd)}"
        return text
    return f"recorded: {fmt.usd(usd)}, the log's own requests"


def totals_parts(result: ReplayReport) -> list[tuple[str, str]]:
    """(policy, "$2.44 · net $2.61 · 0 overflows · 0.54× cc · net 0.58×") for the header, in policy
    order: the dollars, net of re-reads (left out when no re-read was charged), and the ratios to
    cc of both (a report saved before re-reads: without the net figures)."""
    base = result.totals.get(BASELINE)
    parts = []
    for name, (cost, overflows, net) in result.totals.items():
        text = fmt.usd(cost)
        if net is not None and net != cost:
            text += f" · net {fmt.usd(net)}"
        if overflows is not None:
            text += f" · {overflows} overflow{'' if overflows == 1 else 's'}"
        if name != BASELINE and base is not None and base.cost_usd:
            text += f" · {ratio(cost, base.cost_usd)} {BASELINE}"
            if net is not None and base.net_cost_usd:
                text += f" · net {ratio(net, base.net_cost_usd)}"
        parts.append((name, text))
    return parts


def validation_text(session: SessionResult) -> str:
    """How close the simulator came to the log's own cache figures, or why there is none."""
    v = session.validation
    r, w = v.cache_read_error_pct, v.cache_write_error_pct
    if r is None and w is None:
        return "validation: the log records no cache usage to compare with"
    text = (f"validation: replayed cache reads within {fmt.percent(r, 1)}, writes within "
            f"{fmt.percent(w, 1)} of the log")
    if v.misses:
        text += (f"; {len(v.misses)} request(s) missed the cache ({misses_text(v.misses)}) — without them "
                 f"{fmt.percent(v.cache_read_error_pct_without_misses, 1)} / "
                 f"{fmt.percent(v.cache_write_error_pct_without_misses, 1)}")
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
