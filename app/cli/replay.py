"""`ctxtui replay LOG_OR_FOLDER...`: what a recorded session would have cost, and what the model
would still have seen, under other compaction policies — as JSON or a text table (the screen is
app/replay/app.py, opened by app/cli/main.py in a terminal)."""
from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from typing import Callable, NoReturn, Sequence, TextIO

from agent_core.replay.options import BUILTIN, ReplayOptions, ReplayUsageError, engine_settings, make_options
from agent_core.replay.report import format_text
from agent_core.replay.runner import run_replay
from agent_core.security.visible_text import one_line

DESCRIPTION = """\
Replay recorded sessions — Claude Code's logs (main and sub-agent logs, each its own trajectory)
and ctxtui's session logs — under compaction policies, without calling a model: every recorded
request is sent again in a simulation where the policy decides what its context holds, and priced
with a prompt-cache model (writes 1.25x input for 5m, 2x for 1h; reads 0.1x) at genai-prices'
rates. Policies: none (never compact; requests over the window are counted), cc (Claude Code-like:
auto-compact near the threshold, summary plus 5 re-read files, 60-minute clear of old results),
ctxtui (the engine with the loop's defaults), and any variant you name."""

EPILOG = """\
variants:
  --policy NAME:KEY=VALUE[,KEY=VALUE...] replays ctxtui with the loop's own settings changed;
  KEY is one of:
{keys}

output:
  in a terminal: a screen with plots; otherwise (or with --json) text or one JSON object:
  {{"sessions": [{{"path", "model", "requests", "logged_cost_usd" (the log's own requests at
  their dates' prices, as usage counts them), "recorded_cost_usd", "recorded_source" (what the
  session paid: a Claude Code log's cost-state record, its compaction calls included, when it has
  one: "cost-state"; else its requests: "requests"), "claude_code_cost_usd" (the cost-state's own
  total), "validation": {{"cache_read_error_pct",
  "cache_write_error_pct", "misses": [{{"request", "reason", "read", "expected"}}]}},
  "cache_doctor": [{{"request", "read", "expected", "short", "where", "why", "model"}}] (each
  request that read less from the cache than the one before left: where its prefix changed,
  "tools or system" or "message N", and why: model switch, TTL expired, compaction rewrite),
  "policies": {{NAME: {{"cost_usd", "cost_by_bucket", "overflows",
  "compactions", "cache_hit_rate", "user_messages_kept", "user_messages_total",
  "references_kept", "references_total", "content_kept", "content_total" (uses of a file
  read earlier — a prompt or an answer names it again — whose content the context still
  carried), "rereads" (the other uses: each a re-read), "rereads_logged" (of them, the log's
  own), "reread_usd" (the round trips of the others, not in cost_usd), "net_cost_usd" (cost_usd
  + reread_usd: the prediction), "summary_calls" (priced in cost_usd), "refusals" (requests a
  reactive policy sent over the window, refused, compacted and sent again),
  "series": {{"context", "cost_cum", "markers"}}}}}}}}],
  "totals": {{NAME: {{"cost_usd", "overflows", "net_cost_usd"}}}}, "window", "ttl", "limits",
  "skipped_files": [{{"path", "reason"}}]}}

examples:
  ctxtui replay ~/.claude/projects/-home-me-proj/SESSION.jsonl
  ctxtui replay ~/.claude/projects/-home-me-proj --window 60000 --json
  ctxtui replay ~/.local/state/ctxtui/projects/WORKSPACE/sessions --policy ctxtui-1h:CTXTUI_CACHE_TTL=1h
  ctxtui replay SESSION.jsonl --policy nocollapse:CTXTUI_DISABLE_COLLAPSE=1

logs that cannot be read (a FIFO, a symlink to a device, a symlink loop, no permission) are
skipped, each named on stderr, and the others replayed

exit codes: 0 done, 1 nothing to replay (no model request in the logs) or the replay failed,
2 bad arguments, a path that does not exist, or nothing to replay because logs could not be read"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's exit code 2, with a hint
        self.print_usage(sys.stderr)
        self.exit(2, f"ctxtui replay: error: {message}\n(see `ctxtui replay --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ctxtui replay", description=DESCRIPTION,
                epilog=EPILOG.format(keys=textwrap.fill(", ".join(sorted(engine_settings())), 96,
                                                         initial_indent="    ", subsequent_indent="    ")),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="LOG_OR_FOLDER", help="a .jsonl session log, or a folder of them")
    p.add_argument("--policy", action="append", default=[], metavar="NAME[:KEY=VALUE,...]",
                   help=f"a policy to replay besides {', '.join(BUILTIN)} (always replayed); repeatable")
    p.add_argument("--window", type=int, metavar="N", help="context window in tokens (default: each log's model's)")
    p.add_argument("--ttl", default="5m", metavar="5m|1h", help="prompt-cache TTL the policies ask for (default 5m)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return p


def parse_options(argv: Sequence[str]) -> ReplayOptions | int:
    """The checked options, or an exit code (2) after printing what is wrong."""
    args = build_parser().parse_args(list(argv))
    try:
        return make_options(args.paths, args.policy, args.window, args.ttl, args.json)
    except ReplayUsageError as e:
        print(f"ctxtui replay: error: {one_line(str(e))}\n(see `ctxtui replay --help`)", file=sys.stderr)
        return 2


class StderrProgress:
    """Progress on one stderr line, rewritten in place: nothing for the first `delay` seconds (a
    quick replay prints no progress at all), then at most every `interval` seconds. `clear()`
    wipes the line if anything was written. Only ever on stderr: stdout stays the report."""

    WIDTH = 76

    def __init__(self, err: TextIO, delay: float = 1.0, interval: float = 0.2,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.err, self.delay, self.interval, self.clock = err, delay, interval, clock
        self.start = clock()
        self.last: float | None = None

    def __call__(self, label: str, fraction: float) -> None:
        now = self.clock()
        if now - self.start < self.delay or (self.last is not None and now - self.last < self.interval):
            return
        self.last = now
        line = f"{int(100 * max(0.0, min(1.0, fraction))):3d}% {one_line(label)}"
        if len(line) > self.WIDTH:
            line = line[: self.WIDTH - 1] + "…"
        self.err.write(f"\r{line:<{self.WIDTH}}")
        self.err.flush()

    def clear(self) -> None:
        if self.last is not None:
            self.err.write("\r" + " " * self.WIDTH + "\r")
            self.err.flush()


def run(options: ReplayOptions, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Replay and print JSON or text; progress goes to stderr when it is a terminal and the work
    takes over a second (`StderrProgress`). Every path, name and error text printed passes through
    `one_line`; JSON is escaped by json itself."""
    out = out or sys.stdout
    err = err or sys.stderr
    progress = StderrProgress(err) if err.isatty() else None
    try:
        report = run_replay(options, progress)
    except (OSError, ValueError) as e:
        if progress is not None:
            progress.clear()
        print(f"ctxtui replay: {one_line(str(e))}", file=err)
        return 1
    if progress is not None:
        progress.clear()
    skipped = report.skipped_files
    for s in skipped:
        print(f"ctxtui replay: skipped {one_line(s.path)}: {one_line(s.reason)}", file=err)
    where = ", ".join(one_line(str(p)) for p in options.paths)
    if not report.sessions and skipped:
        n = len(skipped)
        print(f"ctxtui replay: error: nothing to replay under {where}: {n} file{'s' if n != 1 else ''} could "
              "not be read (see above) and no other log holds a model request; give .jsonl session logs that "
              "are regular files", file=err)
        return 2
    if not report.sessions:
        print(f"ctxtui replay: no session log with a model request under {where}", file=err)
        return 1
    if options.json:
        json.dump(report.to_json(), out, separators=(",", ":"))
        out.write("\n")
    else:
        out.write(format_text(report) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(sys.argv[1:] if argv is None else argv)
    return options if isinstance(options, int) else run(options)
