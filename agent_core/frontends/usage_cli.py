"""`ctxtui usage [PATH ...]`: a token and cost report over Claude Code's and ctxtui's session logs."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from datetime import date
from pathlib import Path
from typing import Sequence, TextIO

from agent_core.pricing.cost import BUCKETS
from agent_core.logs import Deduper, LogReader, claude_projects_dir, discover
from agent_core.pricing.tally import Tally
from agent_core.reports.usage_report import UsageReport

DESCRIPTION = """\
Token and cost report over session logs: Claude Code's (~/.claude/projects/<project>/<session>.jsonl,
with their sub-agent logs) and ctxtui's own (.ctxtui/sessions/<id>.jsonl). Each response is counted
once (Claude Code repeats a response's usage on every content block), sub-agent calls included.
Tokens are split into input, output, cache write 5m, cache write 1h and cache read; dollars come from
genai-prices' offline price data (a model it does not know shows its tokens and an unknown cost)."""

EPILOG = """\
paths:
  a .jsonl log file (its <session>/ folder of sub-agent logs is read too), or a folder searched for
  *.jsonl; default $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects

output:
  text: a table grouped by --by, with a totals row; corrupt lines are reported on stderr
  --json: {"totals": {...}, "by_model": {MODEL: {"input_tokens", "output_tokens",
           "cache_write_5m_tokens", "cache_write_1h_tokens", "cache_read_tokens", "total_tokens",
           "requests", "cost_usd"}}, "by_day": {DAY: {...}}, "by_purpose": {PURPOSE: {...}}
           (main, subagent, compaction, memory), "sessions": [{"session_id", "project",
           "models", ..., "cost_usd", "compactions": [...]}], "unpriced_models", "files",
           "skipped_lines"}; cost_usd is null when a model's price is unknown
           (then "priced_cost_usd" holds the part that is known); --json always holds every
           grouping, --by only picks the table's
  days are local dates unless --utc

examples:
  ctxtui usage                                   every Claude Code session on this machine
  ctxtui usage --by day --since 2025-06-01
  ctxtui usage ~/.claude/projects/-home-me-proj --by session --json
  ctxtui usage .ctxtui/sessions

exit codes: 0 done, 2 bad usage (unknown flag, bad date, a path that does not exist)"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's exit code 2, with a hint
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


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ctxtui usage", description=DESCRIPTION, epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", metavar="PATH", type=Path,
                   help="log files or folders (default: Claude Code's projects folder)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--by", choices=("model", "session", "day"), default="model",
                   help="group the table by model (default), session or day")
    p.add_argument("--since", type=_date, metavar="DATE",
                   help="only count records from this day on (YYYY-MM-DD)")
    p.add_argument("--utc", action="store_true", help="days (for --by day and --since) in UTC, not local time")
    return p


def build_report(paths: Sequence[Path], since: date | None = None, utc: bool = False,
                 warn: TextIO | None = None) -> UsageReport:
    """Read every log the paths stand for into one report. Raises FileNotFoundError."""
    report = UsageReport(since=since, utc=utc)
    dedup = Deduper()
    for f in discover(list(paths)):
        reader = LogReader(f, dedup=dedup)
        try:
            report.add_all(reader.records(final=True))
        except OSError as e:
            if warn is not None:
                print(f"ctxtui usage: could not read {f}: {e.strerror or e}", file=warn)
            continue
        report.files += 1
        st = reader.stats
        if st.corrupt:
            report.skipped_lines += st.corrupt
            if warn is not None:
                print(f"ctxtui usage: skipped {st.corrupt} corrupt line{'s' if st.corrupt != 1 else ''} "
                      f"in {f} (first at line {st.first_corrupt_line})", file=warn)
    return report


# ---- text output -------------------------------------------------------------------------------

_HEADERS = ("Requests", "Input", "Output", "Cache write 5m", "Cache write 1h", "Cache read", "Total tokens",
            "Cost (USD)")


def _cost(t: Tally) -> str:
    if t.requests and t.unpriced == t.requests:
        return "unknown"
    s = f"${t.cost:,.2f}" if t.cost >= 1 or t.cost == 0 else f"${t.cost:.4f}"
    return s + "+?" if t.unpriced else s


def _row(label: str, t: Tally) -> list[str]:
    return [label, f"{t.requests:,}", *(f"{t.tokens[k]:,}" for k in BUCKETS),
            f"{sum(t.tokens.values()):,}", _cost(t)]


def render_table(report: UsageReport, by: str) -> str:
    if by == "model":
        rows = [_row(m, t) for m, t in sorted(report.by_model.items(), key=lambda kv: -kv[1].cost)]
        first = "Model"
    elif by == "day":
        rows = [_row(d, t) for d, t in sorted(report.by_day.items())]
        first = "Day"
    else:
        rows = [_row(s.session_id, s.tally) for s in report.session_list()]
        first = "Session"
    header = [first, *_HEADERS]
    body = rows + [_row("Total", report.totals)]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def fmt(r: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    lines = [fmt(header), rule, *(fmt(r) for r in rows), rule, fmt(body[-1])]
    notes = []
    n = report.compaction_count()
    notes.append(f"{len(report.sessions)} session{'s' if len(report.sessions) != 1 else ''}, "
                 f"{report.files} file{'s' if report.files != 1 else ''}, {n} compaction{'s' if n != 1 else ''}")
    if not report.files:
        notes.append("no session logs (*.jsonl) found under the given paths")
    unknown = report.unpriced_models()
    if unknown:
        notes.append("unknown price (cost shown as unknown or +?): " + ", ".join(unknown))
    return "\n".join(lines + [""] + notes)


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:  # --help (0) or a bad flag (2, message already printed)
        return e.code if isinstance(e.code, int) else 2
    paths = args.paths or [claude_projects_dir()]
    try:
        report = build_report(paths, since=args.since, utc=args.utc, warn=err)
    except FileNotFoundError as e:
        hint = "" if args.paths else " (set CLAUDE_CONFIG_DIR or pass a PATH)"
        print(f"ctxtui usage: no such file or folder: {e.args[0] if e.args else e}{hint}", file=err)
        return 2
    try:
        if args.json:
            json.dump(report.to_json(), out, indent=2, allow_nan=False)   # never Infinity/NaN: not JSON
            out.write("\n")
        else:
            out.write(render_table(report, args.by) + "\n")
        out.flush()
    except BrokenPipeError:  # `ctxtui usage | head`: the reader left, which is fine
        if out is sys.stdout:  # keep Python's exit-time flush from failing again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 0
