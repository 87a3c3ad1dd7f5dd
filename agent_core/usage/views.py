"""The `ctxtui usage daily|weekly|monthly|session|blocks` reports as table rows and JSON, built
from one `UsageReport` (and, for blocks, its kept responses)."""
from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Sequence
from datetime import datetime, tzinfo

from agent_core.pricing.tally import Tally
from agent_core.usage.block_rule import BLOCK_S as BLOCK_SECONDS
from agent_core.usage.blocks import Block, Gap, Projection, active_block, build_blocks, project, with_gaps
from agent_core.usage.tables import ABBREVIATION_NOTE, Column, Row, render, tokens
from agent_core.usage.report import SessionSummary, UsageReport, iso

PERIOD_TITLES = {"day": "Day", "week": "Week of", "month": "Month"}
REPORT_PERIODS = {"daily": "day", "weekly": "week", "monthly": "month"}
_DATE_SUFFIX = re.compile(r"-\d{8}$")

TYPE_CHECKING = False    # typing stays unloaded at run time (`ctxtui usage` runs again and again)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")


class View(namedtuple("View", "compact width breakdown tz first_weekday order blocks block_s instances last",
                       defaults=(False, None, False, None, 0, "asc", "all", BLOCK_SECONDS, False, None))):
    """What a report asks for, beyond the records themselves: the compact layout and the
    terminal's width; per-model rows (`--breakdown`); the time zone and first weekday; the rows
    oldest first (asc, ccusage's default too) or newest first (desc); for blocks, all of them, the
    active one or the recent ones, a block's length (`--session-length`) and `--last N`; for the
    period reports, each project's periods apart (`--instances`)."""
    __slots__ = ()
    compact: bool
    width: int | None
    breakdown: bool
    tz: tzinfo | None
    first_weekday: int
    order: str
    blocks: str
    block_s: float
    instances: bool
    last: int | None


ORDERS = ("asc", "desc")


def ordered(rows: Sequence[T], view: View) -> list[T]:
    """Rows given oldest first, in the order the view asks for (totals never depend on it)."""
    return list(rows) if view.order == "asc" else list(reversed(rows))


def cost_text(t: Tally) -> str:
    if t.requests and t.unpriced == t.requests:
        return "unknown"
    s = f"${t.cost:,.2f}" if t.cost >= 1 or t.cost == 0 else f"${t.cost:.4f}"
    return s + "+?" if t.unpriced else s


def short_model(model: str) -> str:
    """claude-sonnet-4-5-20250929 -> sonnet-4-5 (compact tables)."""
    m = model[7:] if model.startswith("claude-") else model
    return _DATE_SUFFIX.sub("", m)


def total_tokens(t: Tally) -> int:
    return sum(t.tokens.values())


# ---- token columns shared by every report ----------------------------------------------------------

def token_columns(compact: bool) -> list[Column]:
    if compact:
        return [Column("Reqs", drop=3), Column("Input", drop=4), Column("Output"), Column("Cache wr", drop=5),
                Column("Cache rd", drop=6), Column("Total"), Column("Cost")]
    return [Column("Requests", drop=3), Column("Input"), Column("Output"), Column("Cache write 5m"),
            Column("Cache write 1h"), Column("Cache read"), Column("Total tokens"), Column("Cost (USD)")]


def token_cells(t: Tally, compact: bool) -> list[str]:
    k = t.tokens
    if compact:
        return [f"{t.requests:,}", tokens(k["input"], True), tokens(k["output"], True),
                tokens(k["cache_write_5m"] + k["cache_write_1h"], True), tokens(k["cache_read"], True),
                tokens(total_tokens(t), True), cost_text(t)]
    return [f"{t.requests:,}", *(f"{k[b]:,}" for b in ("input", "output", "cache_write_5m", "cache_write_1h",
                                                       "cache_read")), f"{total_tokens(t):,}", cost_text(t)]


def _merged(models: dict[str, Tally]) -> Tally:
    out = Tally()
    for t in models.values():
        out.merge(t)
    return out


def _models_text(models: list[str], compact: bool) -> str:
    """The models of a row, shortened (claude-sonnet-4-5-20250929 -> sonnet-4-5); exact in --json."""
    return ", ".join(short_model(m) for m in models)


def _child_rows(models: dict[str, Tally], view: View, blanks: int) -> list[Row]:
    """The per-model rows of --breakdown, under the row they break down; they sum to it."""
    rows = []
    for m, t in sorted(models.items(), key=lambda kv: (-kv[1].cost, kv[0])):
        label = "  - " + (short_model(m) if view.compact else m)
        rows.append(Row([label, *[""] * blanks, *token_cells(t, view.compact)], "child"))
    return rows


def notes_for(view: View, dropped: list[str]) -> list[str]:
    notes = []
    if view.compact:
        notes.append(ABBREVIATION_NOTE)
    if dropped:
        notes.append("left out to fit the terminal: " + ", ".join(dropped) + " (--json has them)")
    return notes


# ---- daily / weekly / monthly ----------------------------------------------------------------------

def _period_rows(groups: dict[str, dict[str, Tally]], view: View, indent: str = "") -> list[Row]:
    rows: list[Row] = []
    for label in ordered(sorted(groups), view):
        models = groups[label]
        rows.append(Row([indent + label, _models_text(sorted(models), view.compact),
                         *token_cells(_merged(models), view.compact)]))
        if view.breakdown:
            rows.extend(_child_rows(models, view, 1))
    return rows


def period_table(report: UsageReport, period: str, view: View) -> tuple[list[str], list[str]]:
    title = PERIOD_TITLES[period]
    cols = [Column(f"Project / {title.lower()}" if view.instances else title, "<"), Column("Models", "<", drop=1),
            *token_columns(view.compact)]
    rows: list[Row] = []
    if view.instances:
        # Each project's row (its sum over the range), then its periods under it.
        for project in report.projects():
            groups = report.by_period(period, view.first_weekday, project)
            models: dict[str, Tally] = {}
            for g in groups.values():
                for m, t in g.items():
                    models.setdefault(m, Tally()).merge(t)
            rows.append(Row([project, _models_text(sorted(models), view.compact),
                             *token_cells(_merged(models), view.compact)], "group"))
            rows.extend(_period_rows(groups, view, indent="  "))
    else:
        rows.extend(_period_rows(report.by_period(period, view.first_weekday), view))
    rows.append(Row(["Total", "", *token_cells(report.totals, view.compact)], "total"))
    lines, dropped = render(cols, rows, view.width, view.compact)
    return lines, notes_for(view, dropped)


def instances_json(report: UsageReport, period: str, view: View) -> dict[str, list[dict[str, Any]]]:
    """`--instances --json`: {project: its period rows}, the projects by name."""
    return {p: period_json(report, period, view, p) for p in report.projects()}


def period_json(report: UsageReport, period: str, view: View, project: str | None = None) -> list[dict[str, Any]]:
    groups = report.by_period(period, view.first_weekday, project)
    out = []
    for label in ordered(sorted(groups), view):
        models = groups[label]
        row: dict[str, Any] = {"period": label, "models": sorted(models), **_merged(models).report_dict()}
        if view.breakdown:
            row["breakdown"] = {m: t.report_dict() for m, t in sorted(models.items())}
        out.append(row)
    return out


# ---- sessions --------------------------------------------------------------------------------------

def local_time(ts: float | None, tz: tzinfo | None, compact: bool = False) -> str:
    if ts is None:
        return "-"
    d = datetime.fromtimestamp(ts, tz) if tz is not None else datetime.fromtimestamp(ts).astimezone()
    return d.strftime("%m-%d %H:%M" if compact else "%Y-%m-%d %H:%M")


def _short_project(project: str, compact: bool, limit: int = 18) -> str:
    if not compact or len(project) <= limit:
        return project
    return "…" + project[-(limit - 1):]


def session_table(report: UsageReport, view: View) -> tuple[list[str], list[str]]:
    c = view.compact
    cols = [Column("Project", "<"), Column("Session", "<"), Column("Models", "<", drop=1),
            Column("First", "<", drop=2), Column("Last activity", "<", drop=7), *token_columns(c)]
    rows: list[Row] = []
    for s in ordered(report.session_list(), view):
        rows.append(Row([_short_project(s.project, c), s.session_id[:8] if c else s.session_id,
                         _models_text(sorted(s.models), c), local_time(s.first, view.tz, c),
                         local_time(s.last, view.tz, c), *token_cells(s.tally, c)]))
        if view.breakdown:
            rows.extend(_child_rows(s.by_model(), view, 4))
    rows.append(Row(["Total", "", "", "", "", *token_cells(report.totals, c)], "total"))
    lines, dropped = render(cols, rows, view.width, c)
    return lines, notes_for(view, dropped)


def session_json(s: SessionSummary, view: View) -> dict[str, Any]:
    d = s.to_dict()
    if view.breakdown:
        d["breakdown"] = {m: t.report_dict() for m, t in sorted(s.by_model().items())}
    return d


# ---- 5-hour blocks ---------------------------------------------------------------------------------

def _duration(seconds: float) -> str:
    m = int(seconds // 60)
    return f"{m // 60}h{m % 60:02d}m"


def _pct(n: float, limit: int | None) -> str:
    return "" if not limit else f"{100 * n / limit:.0f}%"


def blocks_of(report: UsageReport, length: float = BLOCK_SECONDS) -> list[Block]:
    return build_blocks((report.responses or {}).values(), length)


RECENT_S = 3 * 86_400   # `blocks --recent`: the blocks that ended in the last three days (ccusage's span)


def shown_blocks(blocks: list[Block], now: float, view: View) -> list[Block]:
    """The blocks a `blocks` report shows: all, the active one (none when none is), or the recent."""
    if view.blocks == "active":
        active = active_block(blocks, now)
        return [] if active is None else [active]
    if view.blocks == "recent":
        blocks = [b for b in blocks if b.end > now - RECENT_S]
    return blocks[-view.last:] if view.last else blocks


def blocks_table(blocks: list[Block], now: float, limit: int | None, view: View) -> tuple[list[str], list[str]]:
    c = view.compact
    cols = [Column("Block start", "<"), Column("Status", "<"), Column("Models", "<", drop=1),
            *token_columns(c)]
    if limit:
        cols.append(Column("% limit"))
    rows: list[Row] = []
    width = len(cols)
    every, blocks = blocks, shown_blocks(blocks, now, view)
    for item in ordered(list(with_gaps(blocks)), view):
        if isinstance(item, Gap):
            rows.append(Row([local_time(item.start, view.tz, c), f"gap {_duration(item.end - item.start)}",
                             *[""] * (width - 2)], "gap"))
            continue
        t = item.tally
        status = f"active, {_duration(item.end - now)} left" if item.is_active(now) else "done"
        cells = [local_time(item.start, view.tz, c), status, _models_text(sorted(item.by_model), c),
                 *token_cells(t, c)]
        if limit:
            cells.append(_pct(total_tokens(t), limit))
        rows.append(Row(cells))
        if view.breakdown:
            for r in _child_rows(item.by_model, view, 2):
                rows.append(Row(r.cells + ([""] if limit else []), "child"))
    total = Tally()
    for b in blocks:
        total.merge(b.tally)
    rows.append(Row(["Total", "", "", *token_cells(total, c)] + ([""] if limit else []), "total"))
    lines, dropped = render(cols, rows, view.width, c)
    notes = notes_for(view, dropped)
    active = active_block(every, now)
    if active is not None:
        notes.insert(0, projection_text(project(active, now), active, limit, view))
    elif every:
        notes.insert(0, "no active block (the last one ended " + local_time(every[-1].end, view.tz) + ")")
    if view.blocks == "recent":
        notes.append("blocks that ended in the last 3 days, and the active one")
    if limit:
        notes.append(f"token limit: {limit:,} tokens per block")
    return lines, notes


def projection_text(p: Projection, b: Block, limit: int | None, view: View) -> str:
    rate = f"{p.tokens_per_minute:,.0f} tokens/min"
    if p.cost_per_hour is not None:
        rate += f", ${p.cost_per_hour:,.2f}/h"
    end = f"{p.projected_tokens:,} tokens"
    if p.projected_cost is not None:
        end += f", ${p.projected_cost:,.2f}"
    if limit:
        end += f" ({_pct(p.projected_tokens, limit)} of the limit" + \
            (", over it)" if p.projected_tokens > limit else ")")
    return (f"active block: {_duration(p.seconds_left)} left (ends {local_time(b.end, view.tz)}); "
            f"burn rate {rate}; projected at its end: {end}")


def blocks_json(blocks: list[Block], now: float, limit: int | None, view: View) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    every, blocks = blocks, shown_blocks(blocks, now, view)
    for item in ordered(list(with_gaps(blocks)), view):
        if isinstance(item, Gap):
            out.append({"gap": True, "start": iso(item.start), "end": iso(item.end)})
            continue
        t = item.tally
        d: dict[str, Any] = {"gap": False, "start": iso(item.start), "end": iso(item.end),
                             "first_activity": iso(item.first), "last_activity": iso(item.last),
                             "active": item.is_active(now), "models": sorted(item.by_model), **t.report_dict()}
        if limit:
            d["limit_pct"] = round(100 * total_tokens(t) / limit, 2)
        if view.breakdown:
            d["breakdown"] = {m: x.report_dict() for m, x in sorted(item.by_model.items())}
        out.append(d)
    active = active_block(every, now)
    proj = None
    if active is not None:
        p = project(active, now)
        proj = {"start": iso(active.start), "end": iso(active.end), "seconds_left": round(p.seconds_left),
                "tokens": p.tokens, "tokens_per_minute": round(p.tokens_per_minute, 2),
                "cost_per_hour": None if p.cost_per_hour is None else round(p.cost_per_hour, 6),
                "projected_tokens": p.projected_tokens,
                "projected_cost_usd": None if p.projected_cost is None else round(p.projected_cost, 6)}
        if limit:
            proj["projected_limit_pct"] = round(100 * p.projected_tokens / limit, 2)
    return {"blocks": out, "active": proj, "token_limit": limit, "now": iso(now)}
