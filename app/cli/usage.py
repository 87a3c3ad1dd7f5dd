"""`ctxtui usage [REPORT] [PATH ...]`: token and cost reports over Claude Code's and ctxtui's session logs."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from datetime import date, datetime, timezone
from pathlib import Path

from agent_core.logs import claude_config_dirs, claude_projects_dirs, discover
from agent_core.pricing.pricer import Pricer
from agent_core.pricing import rates_cache, rates_table
from agent_core.usage import colour, report_cache
from agent_core.usage.blocks import token_limit
from agent_core.usage.periods import WEEKDAYS, BadTimezone, resolve_timezone
from agent_core.usage.tables import Column, Row, is_compact, render, terminal_columns, terminal_width
from agent_core.usage.report import COST_MODES, Mismatch, UsageReport, iso, project_of
from agent_core.usage.views import (ORDERS, REPORT_PERIODS, View, blocks_json, notes_for, blocks_of, blocks_table,
                                    instances_json, ordered, period_json, period_table, session_json,
                                    session_table, token_cells, token_columns)
from agent_core.security.visible_text import one_line

TYPE_CHECKING = False    # typing stays unloaded at run time (`ctxtui usage` runs again and again)
if TYPE_CHECKING:
    from typing import Callable, NoReturn, Sequence, TextIO

REPORTS = ("daily", "weekly", "monthly", "session", "blocks")
# The options only some reports take, at their defaults (`ctxtui usage` alone: --by).
REPORT_OPTION_DEFAULTS = dict(by="model", breakdown=False, last=None, order="asc", instances=False, start_of_week=0,
                              token_limit=None, blocks="all", session_length=5.0, now=None)

DESCRIPTION = """\
Token and cost reports over session logs: Claude Code's (~/.claude/projects/<project>/<session>.jsonl,
with their sub-agent logs) and ctxtui's own (in ctxtui's state folder, never the workspace:
<state>/projects/<workspace>/sessions/<id>.jsonl, the state folder being $CTXTUI_HOME, else
$XDG_STATE_HOME/ctxtui, else ~/.local/state/ctxtui). Each response is counted
once, with its final usage (Claude Code repeats a response's usage on every content block and only
the last copy holds the final output count), sub-agent calls included. Tokens are split into input,
output, cache write 5m, cache write 1h and cache read; dollars come from genai-prices' offline price
data (a model it does not know shows its tokens and an unknown cost)."""

EPILOG = """\
reports (ctxtui usage REPORT [PATH ...] [options]):
  daily, weekly, monthly   one row per day, week (from --start-of-week, default Monday) or month
  session                  one row per session: project, models, first and last activity
  blocks                   5-hour billing windows as Claude's plans count them: a block starts at its
                           first activity floored to the hour and lasts 5 h; a gap of more than 5 h
                           starts a new one (gaps shown). The active block: time left, burn rate
                           and a projection to its end; --token-limit N|max compares with a limit
  (no report)              the summary grouped by --by (model, session or day)

paths:
  a .jsonl log file (its <session>/ folder of sub-agent logs is read too), or a folder searched for
  *.jsonl; default: projects/ in each folder of $CLAUDE_CONFIG_DIR (separated by commas), else
  both ~/.config/claude/projects and ~/.claude/projects (those that exist)

prices: genai-prices' data, whose loading takes longer than reading a big log; each model's learned
  per-token rates are kept in $XDG_CACHE_HOME/ctxtui/usage-rates.json (~/.cache/ctxtui, or
  $CTXTUI_HOME/cache) so later runs load it only for a new model; safe to delete

again: each report keeps its state in that folder's usage-reports/ (one file per set of options,
  0600), so the same report later reads only the lines appended since; a log rewritten, replaced
  or cut short, or one that cannot be read, makes the run read everything again; safe to delete

output:
  text: a table with a totals row; under 100 terminal columns a compact table (token counts
  abbreviated as 1.2M, columns left out to fit are named); corrupt lines: one warning on stderr;
  a file that cannot be read (a FIFO, a device, a symlink loop) is skipped, one warning each.
  Names from the logs (models, sessions, project folders) are shown with their control
  characters made visible (ESC as ␛, C1 as \\x9b): a log cannot drive the terminal
  --json (no report): {"totals": {...}, "by_model": {MODEL: {"input_tokens", "output_tokens",
           "cache_write_5m_tokens", "cache_write_1h_tokens", "cache_read_tokens", "total_tokens",
           "requests", "cost_usd"}}, "by_day": {DAY: {...}}, "by_purpose": {PURPOSE: {...}}
           (main, subagent, compaction, memory), "sessions": [{"session_id", "project",
           "models", ..., "cost_usd", "compactions": [...]}], "unpriced_models", "files",
           "skipped_lines"}; cost_usd is null when a model's price is unknown
           (then "priced_cost_usd" holds the part that is known); --json always holds every
           grouping, --by only picks the table's
  --json with a report: {"report", "timezone", "totals", "unpriced_models", "files", "skipped_lines"}
           and "rows" [{"period", "models", <token fields>, "breakdown": {MODEL: {...}}}]
           (daily/weekly/monthly), "sessions" [...] (session), or "blocks" [{"start", "end",
           "first_activity", "last_activity", "active", "gap", <token fields>}], "active"
           {"seconds_left", "tokens_per_minute", "cost_per_hour", "projected_tokens",
           "projected_cost_usd"} and "token_limit" (blocks); times in UTC (ISO 8601)
  days, --since and --until are dates in --timezone (default: local time; --utc is --timezone UTC)

examples:
  ctxtui usage daily                             every Claude Code session on this machine, per day
  ctxtui usage monthly --breakdown --timezone Asia/Tokyo
  ctxtui usage session --project myapp --since 2025-06-01 --until 2025-06-30
  ctxtui usage blocks --token-limit max
  ctxtui usage ~/.claude/projects/-home-me-proj --by session --json
  ctxtui usage ~/.local/state/ctxtui/projects    every ctxtui session on this machine

exit codes: 0 done, 2 bad usage (unknown flag, bad date or time zone, a path that does not exist)"""


class _Help(argparse.RawDescriptionHelpFormatter):
    """argparse's own, told the width: it makes a formatter for every option added, and its own
    default width imports shutil (2 ms of every run, for help printed once in a thousand runs)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=terminal_columns(80) - 2)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's exit code 2, with a hint
        self.print_usage(sys.stderr)
        self.exit(2, f"ctxtui usage: error: {message}\n(see `ctxtui usage --help`)\n")


def _date(value: str) -> date:
    for v in (value, f"{value[:4]}-{value[4:6]}-{value[6:]}" if len(value) == 8 and value.isdigit() else None):
        if v:
            try:
                return date.fromisoformat(v)
            except ValueError:
                pass
    raise argparse.ArgumentTypeError(f"not a date: {value!r} (expected YYYY-MM-DD, e.g. 2025-06-01)")


def _weekday(value: str) -> int:
    v = value.lower()
    for i, name in enumerate(WEEKDAYS):
        if len(v) >= 2 and name.startswith(v):
            return i
    raise argparse.ArgumentTypeError(f"not a weekday: {value!r} (expected monday ... sunday)")


def _limit(value: str) -> str:
    if value == "max" or (value.isdigit() and int(value) > 0):
        return value
    raise argparse.ArgumentTypeError(f"not a token limit: {value!r} (expected a positive number or 'max')")


def _count(value: str) -> int:
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise argparse.ArgumentTypeError(f"not a count: {value!r} (expected a whole number above 0)")


def _hours(value: str) -> float:
    try:
        hours = float(value)
    except ValueError:
        hours = 0.0
    if 0 < hours <= 24:
        return hours
    raise argparse.ArgumentTypeError(f"not a block length: {value!r} (expected hours, above 0 and at most 24)")


def _instant(value: str) -> float:
    try:
        d = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date and time: {value!r} (e.g. 2025-06-14T10:00:00Z)") from None
    return (d if d.tzinfo else d.replace(tzinfo=timezone.utc)).timestamp()


def build_parser(report: str | None = None) -> argparse.ArgumentParser:
    prog = f"ctxtui usage {report}" if report else "ctxtui usage"
    # Without a report named, the synopsis names them: argparse's own would only list the options.
    synopsis = None if report else f"%(prog)s [{'|'.join(REPORTS)}] [options] [PATH ...]"
    p = _Parser(prog=prog, usage=synopsis, description=DESCRIPTION, epilog=EPILOG, formatter_class=_Help)
    # Every option has a value, given or not: the ones a report does not take are at their defaults.
    p.set_defaults(**REPORT_OPTION_DEFAULTS)
    p.add_argument("paths", nargs="*", metavar="PATH", type=Path,
                   help="log files or folders (default: Claude Code's projects folder)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    colour = p.add_mutually_exclusive_group()
    colour.add_argument("--color", dest="color", action="store_const", const=True, default=None,
                        help="colour the table even when not printing to a terminal")
    colour.add_argument("--no-color", dest="color", action="store_const", const=False,
                        help="no colour (also when NO_COLOR is set, TERM is dumb, or the output is not a terminal)")
    if report is None:
        p.add_argument("--by", choices=("model", "session", "day"),
                       help="group the table by model (default), session or day")
    p.add_argument("--since", type=_date, metavar="DATE", help="only count records from this day on (YYYY-MM-DD)")
    p.add_argument("--until", type=_date, metavar="DATE", help="only count records up to this day, inclusive")
    p.add_argument("--timezone", metavar="TZ", help="IANA zone for days and times, e.g. Europe/Paris (default: local)")
    p.add_argument("--utc", action="store_true", help="the same as --timezone UTC")
    p.add_argument("--project", metavar="NAME", help="only the projects whose folder name contains NAME")
    p.add_argument("--mode", choices=COST_MODES, default="auto",
                   help="dollars: the log's own costUSD where it has one, else calculated (auto, the default); "
                        "always calculated from the tokens (calculate); only the log's (display, 0 without)")
    p.add_argument("--debug", action="store_true",
                   help="list the responses whose logged costUSD differs from the calculated price (stderr; "
                        "--json: mismatches)")
    if report is not None:
        p.add_argument("--breakdown", action="store_true", help="per-model rows inside each period, session or block")
        p.add_argument("--last", type=_count, metavar="N",
                       help="only the N most recent periods, sessions or blocks with usage (the totals are theirs; "
                            "for periods it is a --since)")
        p.add_argument("--order", choices=ORDERS,
                       help="rows oldest first (asc, the default) or newest first (desc); the totals are the same")
    if report in REPORT_PERIODS:
        p.add_argument("--instances", action="store_true",
                       help="each project's periods apart, under a row with the project's sum (JSON: projects)")
    if report == "weekly":
        p.add_argument("--start-of-week", type=_weekday, metavar="DAY",
                       help="the first day of a week (default monday)")
    if report == "blocks":
        p.add_argument("--token-limit", type=_limit, metavar="N|max",
                       help="show each block against N tokens, or the most any finished block used")
        which = p.add_mutually_exclusive_group()
        which.add_argument("--active", dest="blocks", action="store_const", const="active",
                           help="only the active block, with its time left, burn rate and projection")
        which.add_argument("--recent", dest="blocks", action="store_const", const="recent",
                           help="only the blocks that ended in the last 3 days, and the active one")
        p.add_argument("--session-length", type=_hours, metavar="HOURS",
                       help="a block's length in hours (default 5, as Claude's plans count usage)")
        p.add_argument("--now", type=_instant, metavar="TIME", help=argparse.SUPPRESS)   # tests and what-ifs
    return p


def build_report(paths: Sequence[Path], since: date | None = None, utc: bool = False,
                 warn: TextIO | None = None, *, until: date | None = None, tz=None, project: str | None = None,
                 keep_responses: bool = False, cost_mode: str = "auto", debug: bool = False) -> UsageReport:
    """Read every log the paths stand for into one report. Raises FileNotFoundError. Corrupt lines
    make one warning line on `warn`, summed over every file; a file that cannot be read (a FIFO, a
    device, a symlink loop) one line each, and it is counted in `report.unreadable`. Paths in
    these lines come from folders anyone may name: they pass through `one_line`."""
    prices = rates_cache.prices_stamp()
    cache = rates_cache.cache_dir() / rates_cache.FILE_NAME
    known = rates_cache.load(cache, prices)
    pricer = Pricer(known={**rates_table.load()[0], **known})

    def new_report() -> UsageReport:
        return UsageReport(since=since, utc=utc, until=until, tz=tz, keep_responses=keep_responses, pricer=pricer,
                           cost_mode=cost_mode, debug=debug)

    def unreadable(f: Path, e: OSError) -> None:
        if warn is not None:
            print(f"ctxtui usage: could not read {one_line(str(f))}: {one_line(str(e.strerror or e))}", file=warn)

    files = [f for f in discover(list(paths)) if project is None or project in project_of(str(f))]
    key = report_cache.options_key(paths, project=project, since=since, until=until, utc=utc, tz=_zone_key(tz),
                                   keep_responses=keep_responses, cost_mode=cost_mode, debug=debug)
    report, logs = report_cache.build(files, new_report, rates_cache.cache_dir(), key,
                                      report_cache.stamp(prices), unreadable)
    learned = {m: v for m, v in pricer.learned().items() if m not in rates_table.load()[0] or m in known}
    if learned.keys() - known.keys():
        rates_cache.save(cache, prices, learned)
    bad = [s for s in logs if s.corrupt]
    if warn is not None and bad:
        n = sum(s.corrupt for s in bad)
        print(f"ctxtui usage: skipped {n} corrupt line{'s' if n != 1 else ''} in {len(bad)} "
              f"file{'s' if len(bad) != 1 else ''}; first: {one_line(bad[0].path)}:{bad[0].first_corrupt}", file=warn)
    return report


def _zone_key(tz: object) -> str:
    """The time zone days are counted in, for the saved state: a named zone, or what makes up the
    local one (TZ, /etc/localtime's target, the offsets), so a change of either reads cold."""
    if tz is not None:
        return repr(tz)
    return repr((os.environ.get("TZ"), os.path.realpath("/etc/localtime"), time.tzname, time.timezone, time.altzone))


# ---- --debug -------------------------------------------------------------------------------------

DEBUG_LINES = 20     # the mismatches listed on stderr (all of them in --json)


def _sorted_mismatches(report: UsageReport) -> list[Mismatch]:
    return sorted((report.mismatches or {}).values(), key=lambda m: (-abs(m.logged_usd - m.calculated_usd),
                                                                     m.request_key))


def print_mismatches(report: UsageReport, err: TextIO) -> None:
    """The responses whose logged and calculated prices differ, the largest differences first."""
    found = _sorted_mismatches(report)
    if not found:
        print("ctxtui usage: debug: no response's logged costUSD differs from its calculated price", file=err)
        return
    print(f"ctxtui usage: debug: {len(found)} response{'s' if len(found) != 1 else ''} whose logged costUSD "
          f"differs from the calculated price (largest first):", file=err)
    for m in found[:DEBUG_LINES]:
        print(f"  {one_line(m.model)}  logged ${m.logged_usd:.6f}  calculated ${m.calculated_usd:.6f}  "
              f"{iso(m.timestamp) or '-'}  {one_line(m.request_key)}  {one_line(m.path)}", file=err)
    if len(found) > DEBUG_LINES:
        print(f"  … and {len(found) - DEBUG_LINES} more (--json lists them all)", file=err)


def mismatches_json(report: UsageReport) -> list[dict]:
    return [{"request": m.request_key, "model": m.model, "timestamp": iso(m.timestamp), "path": m.path,
             "logged_usd": m.logged_usd, "calculated_usd": round(m.calculated_usd, 9)}
            for m in _sorted_mismatches(report)]


# ---- text output -------------------------------------------------------------------------------

def _count_note(report: UsageReport) -> list[str]:
    n, s = report.compaction_count(), len(report.sessions)
    notes = [f"{s} session{'s' if s != 1 else ''}, {report.files} file{'s' if report.files != 1 else ''}, "
             f"{n} compaction{'s' if n != 1 else ''}"]
    if not report.files:
        notes.append(f"no readable session logs (*.jsonl) under the given paths ({report.unreadable} skipped: "
                     "not a regular file, or unreadable)" if report.unreadable
                     else "no session logs (*.jsonl) found under the given paths")
    unknown = report.unpriced_models()
    if unknown:
        notes.append("unknown price (cost shown as unknown or +?): " + ", ".join(one_line(m) for m in unknown))
    return notes


def render_table(report: UsageReport, by: str, view: View | None = None) -> str:
    """The summary table (no report named): one row per model, day or session."""
    view = view or View()
    if by == "model":
        items = sorted(report.by_model.items(), key=lambda kv: -kv[1].cost)
        first = "Model"
    elif by == "day":
        items = sorted(report.by_day.items())
        first = "Day"
    else:
        items = [(s.session_id, s.tally) for s in report.session_list()]
        first = "Session"
    cols = [Column(first, "<"), *token_columns(view.compact)]
    rows = [Row([label, *token_cells(t, view.compact)]) for label, t in items]
    rows.append(Row(["Total", *token_cells(report.totals, view.compact)], "total"))
    lines, dropped = render(cols, rows, view.width, view.compact)
    return "\n".join(lines + [""] + notes_for(view, dropped) + _count_note(report))


def render_report(report: UsageReport, name: str, view: View, now: float, limit_arg: str | None) -> str:
    if name in REPORT_PERIODS:
        lines, notes = period_table(report, REPORT_PERIODS[name], view)
    elif name == "session":
        lines, notes = session_table(report, view)
    else:
        blocks = blocks_of(report, view.block_s)
        limit = token_limit(limit_arg, blocks, now) if limit_arg else None
        lines, notes = blocks_table(blocks, now, limit, view)
    return "\n".join(lines + [""] + notes + _count_note(report))


def report_json(report: UsageReport, name: str, view: View, tz_name: str, now: float,
                limit_arg: str | None) -> dict:
    out: dict = {"report": name, "timezone": tz_name}
    if name in REPORT_PERIODS and view.instances:
        out["projects"] = instances_json(report, REPORT_PERIODS[name], view)
    elif name in REPORT_PERIODS:
        out["rows"] = period_json(report, REPORT_PERIODS[name], view)
    elif name == "session":
        out["sessions"] = [session_json(s, view) for s in ordered(report.session_list(), view)]
    else:
        blocks = blocks_of(report, view.block_s)
        out.update(blocks_json(blocks, now, token_limit(limit_arg, blocks, now) if limit_arg else None, view))
    out["totals"] = {**report.totals.report_dict(), "sessions": len(report.sessions),
                     "compactions": report.compaction_count()}
    out.update(unpriced_models=report.unpriced_models(), files=report.files, skipped_lines=report.skipped_lines)
    return out


def _fitted(text_of: Callable[[View], str], view: View) -> str:
    """The full layout when it fits the terminal, else the compact one."""
    text = text_of(view)
    table = text.split("\n\n", 1)[0]           # the notes under it may wrap
    if view.compact or view.width is None or max(map(len, table.splitlines()), default=0) <= view.width:
        return text
    return text_of(view._replace(compact=True))


def _split_report(argv: list[str]) -> tuple[str | None, list[str]]:
    """`usage daily ...` names a report; a path that happens to be called `daily` is `./daily`."""
    if argv and argv[0] in REPORTS:
        return argv[0], argv[1:]
    return None, argv


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    err = stderr or sys.stderr
    try:
        return _main(argv, stdout or sys.stdout, err)
    except KeyboardInterrupt:       # Ctrl-C: a line, not a traceback; the saved state is as it was (written atomically)
        print("ctxtui usage: interrupted", file=err)
        return 130


def _main(argv: Sequence[str] | None, out: TextIO, err: TextIO) -> int:
    name, rest = _split_report(list(sys.argv[1:] if argv is None else argv))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = build_parser(name).parse_args(rest)
    except SystemExit as e:  # --help (0) or a bad flag (2, message already printed)
        return e.code if isinstance(e.code, int) else 2
    try:
        tz = resolve_timezone("UTC" if args.utc and not args.timezone else args.timezone)
    except BadTimezone as e:
        print(f"ctxtui usage: error: {one_line(str(e))}", file=err)
        return 2
    paths = args.paths or claude_projects_dirs()
    if not paths:
        looked = ", ".join(one_line(str(d / "projects")) for d in claude_config_dirs())
        print(f"ctxtui usage: no Claude Code projects folder (looked in {looked}); "
              "set CLAUDE_CONFIG_DIR (folders separated by commas) or pass a PATH", file=err)
        return 2
    try:
        report = build_report(paths, since=args.since, until=args.until, tz=tz, project=args.project, warn=err,
                              keep_responses=name == "blocks", cost_mode=args.mode, debug=args.debug)
    except FileNotFoundError as e:
        hint = "" if args.paths else " (set CLAUDE_CONFIG_DIR or pass a PATH)"
        print(f"ctxtui usage: no such file or folder: {one_line(str(e.args[0] if e.args else e))}{hint}", file=err)
        return 2
    last = args.last
    if last and name in REPORT_PERIODS:
        report.keep_last_periods(last, REPORT_PERIODS[name], args.start_of_week)
    elif last and name == "session":
        report.keep_last_sessions(last)
    width = terminal_width()
    view = View(compact=is_compact(width), width=width, breakdown=args.breakdown, tz=tz,
                first_weekday=args.start_of_week, order=args.order, blocks=args.blocks,
                block_s=args.session_length * 3600, instances=args.instances, last=last if name == "blocks" else None)
    now = args.now or time.time()
    limit_arg = args.token_limit
    if args.debug and not args.json:
        print_mismatches(report, err)
    try:
        if args.json:
            data = report.to_json() if name is None else report_json(
                report, name, view, args.timezone or ("UTC" if args.utc else "local"), now, limit_arg)
            if args.debug:
                data["mismatches"] = mismatches_json(report)
            # one write: json.dump writes each of its thousands of pieces on its own
            out.write(json.dumps(data, indent=2, allow_nan=False) + "\n")   # never Infinity/NaN: not JSON
        else:
            text = _fitted(lambda v: render_table(report, args.by, v) if name is None
                           else render_report(report, name, v, now, limit_arg), view)
            out.write((colour.paint(text) if colour.wanted(out, os.environ, args.color) else text) + "\n")
        out.flush()
    except BrokenPipeError:  # `ctxtui usage | head`: the reader left, which is fine
        if out is sys.stdout:  # keep Python's exit-time flush from failing again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 0
