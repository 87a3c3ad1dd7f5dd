"""`ctxtui watch [PATH]`: parse the arguments, find the log, run the watch app (app/watch/app.py)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn, Sequence, TextIO

from agent_core.logs import open_regular
from agent_core.watch.target import WatchError, WatchTarget, resolve_target
from agent_core.security.visible_text import visible

MIN_WINDOW = 1_000

DESCRIPTION = """\
Follow a session log live and show the context window, the cost and each compaction as it lands:
ctxtui's own logs (kept in ctxtui's state folder, never the workspace) and Claude Code's (<session>.jsonl under
~/.claude/projects), which are only read, never written. The context state uses the same
thresholds as ctxtui's loop for the log's model (window from genai-prices' data)."""

EPILOG = """\
PATH:
  a .jsonl session log, or a folder: then the most recently written session log under it, and a
  newer session appearing there later is switched to (a notice says so). A workspace folder is
  followed where its logs are kept (ctxtui's state folder or Claude Code's project folder for it).
  Default: the ctxtui sessions of the current folder (in ctxtui's state folder:
  <state>/projects/<this folder>/sessions) when there are any, else Claude Code's projects folder
  ($CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects). A folder with no log yet is waited on:
  the first log written is followed.

what is shown:
  header     the file, its format, the model and its thresholds, responses, compactions, and how
             many corrupt or cut-off lines were skipped
  context    tokens / window of the last response, state (ok, warning, error, auto-compact,
             blocking), percent left until auto-compact, gauge, and a plot with compaction points
  cost       tokens and dollars by model x bucket (input, output, cache write 5m / 1h, cache read),
             priced offline with genai-prices; cache hit rate, cache savings, burn rate
  timeline   each compaction: time, layer, trigger, tokens before, after and freed (a Claude
             Code compaction shows "…" after it until the next response tells the count)
  activity   the last prompt and the latest tool calls since it, as they land

keys: q quit, c maximize the cost pane, ctrl+p command palette

environment: CTXTUI_HOME (ctxtui's state folder; default $XDG_STATE_HOME/ctxtui, else
  ~/.local/state/ctxtui), CLAUDE_CONFIG_DIR (Claude Code's config folder)

examples:
  ctxtui watch                                       this folder's newest ctxtui session
  ctxtui watch ~/.claude/projects                    the newest Claude Code session anywhere
  ctxtui watch ~/.claude/projects/-home-me-proj/5f1e2d3c-....jsonl --context-window 1000000
  ctxtui watch /mnt/share/ctxtui-state/projects --poll   a network folder without change events

exit codes: 0 done, 2 bad usage (unknown flag, a path that does not exist or cannot be read),
130 interrupted"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's exit code 2, with a hint
        self.print_usage(sys.stderr)
        self.exit(2, f"ctxtui watch: error: {message}\n(see `ctxtui watch --help`)\n")


def _window(value: str) -> int:
    try:
        n = int(value.replace("_", "").replace(",", ""))
    except ValueError:
        n = 0
    if n < MIN_WINDOW:
        raise argparse.ArgumentTypeError(f"not a context window: {value!r} (expected a whole number of tokens "
                                         f">= {MIN_WINDOW:,}, e.g. 200000)")
    return n


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ctxtui watch", description=DESCRIPTION, epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", nargs="?", metavar="PATH",
                   help="a session log (.jsonl) or a folder holding some (default: see PATH below)")
    p.add_argument("--context-window", type=_window, metavar="N",
                   help="the context window in tokens, instead of the model's (or the session's configured one)")
    p.add_argument("--poll", action="store_true",
                   help="poll the files (every 100 ms) instead of waiting for file-system change events; "
                        "for network or container folders where those events do not arrive")
    return p


def _check_readable(target: WatchTarget) -> None:
    assert target.log is not None
    try:
        with open_regular(target.log):
            pass
    except OSError as e:
        raise WatchError(f"cannot read {target.log}: {e.strerror or e}. Check the file's permissions.") from None


def main(argv: Sequence[str] | None = None, *, stderr: TextIO | None = None,
         env: dict[str, str] | None = None) -> int:
    err = stderr or sys.stderr
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:          # --help (0) or a usage error (2, message already printed)
        return int(e.code or 0)
    cwd = Path.cwd()
    try:
        target = resolve_target(args.path, cwd=cwd, env=os.environ if env is None else env)
        if target.log is not None:
            _check_readable(target)
    except WatchError as e:
        print(f"ctxtui watch: error: {visible(str(e))}", file=err)      # the path is the user's, its name anyone's
        return 2
    from app.watch.app import WatchApp  # noqa: PLC0415  (start-up time: Textual only once there is something to show)

    app = WatchApp(target, context_window=args.context_window, force_polling=args.poll, cwd=cwd)
    try:
        app.run()
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
