"""The `ctxtui` command. Parses arguments and dispatches; imports Textual only for screens, so
`--headless` and `usage` never load it (docs/architecture.md, "Import rules")."""
from __future__ import annotations

import argparse
import sys

from agent_core.security.process_guard import drop_tool_capabilities, make_non_dumpable
from agent_core.version import __version__

TYPE_CHECKING = False    # typing stays unloaded at run time (start-up time)
if TYPE_CHECKING:
    from typing import Callable

EPILOG = """\
commands:
  ctxtui [options]                 open the TUI (the demo model when no ANTHROPIC_API_KEY is set)
  ctxtui --headless -p PROMPT      run the agent without a screen (prompt may also come on stdin)
  ctxtui --headless --input-format stream-json
                                   one turn per JSON user message on stdin, in one session
  ctxtui --headless --continue --compact [FOCUS]
                                   compact the latest session (e.g. after a breaker stopped auto-compaction)
  ctxtui --headless --continue --compact --preview [FOCUS]
                                   what that compaction would do and cost, changing nothing
  ctxtui watch [PATH]              follow a session log (ctxtui's or Claude Code's) live
  ctxtui serve [--port N] [watch [PATH] | -- OPTIONS]
                                   the TUI (or watch) in a browser: localhost only, a token in the URL (docs/serve.md)
  ctxtui usage [daily|weekly|monthly|session|blocks] [PATH ...]
                                   token and cost reports over session logs (Claude Code's and ctxtui's)
  ctxtui replay PATH... [--json]   what a session would have cost under other compaction policies
  ctxtui statusline                one status line for Claude Code's statusLine setting (JSON on stdin)
  ctxtui acp [options]             serve ctxtui to an editor over the Agent Client Protocol (stdio; docs/acp.md)

environment (flags win over environment, then .env in the workspace, then the user config file):
{variables}

exit codes: 0 done, 1 run failed, 2 bad usage or configuration (or the session is in use),
            130 / 143 / 129 interrupted by SIGINT / SIGTERM / SIGHUP, 141 stdout's reader went away
            (`| head -1`); the session stays resumable
"""


def build_parser() -> argparse.ArgumentParser:
    """The run's own options, then one flag per setting of agent_core/settings_table.py (its help,
    default and variable from the table)."""
    # Loaded here, not at the top, so `ctxtui statusline` (run on every Claude Code refresh) starts fast.
    from agent_core.settings_table import add_setting_flags, format_variables  # noqa: PLC0415  (start-up time)

    p = argparse.ArgumentParser(
        prog="ctxtui", description="Run a Claude coding agent while seeing and controlling its context window.",
        epilog=EPILOG.format(variables=format_variables()), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"ctxtui {__version__}")
    p.add_argument("--headless", action="store_true", help="run without a screen (for scripts and CI)")
    p.add_argument("-p", "--prompt", help="the prompt (headless); '-' or omitted reads stdin")
    p.add_argument("--output-format", choices=["text", "json", "stream-json"], default="text",
                   help="headless output: text (default), json (one object at the end), stream-json (events)")
    p.add_argument("--input-format", choices=["text", "stream-json"], default="text",
                   help="headless input: text (default: one prompt, from -p or stdin), stream-json (one user "
                        "message a line on stdin, {\"type\":\"user\",\"message\":{\"role\":\"user\","
                        "\"content\":\"...\"}}, each run as a turn of one session until the end of input)")
    p.add_argument("--resume", metavar="ID", help="resume the session with this id")
    p.add_argument("--continue", dest="continue_", action="store_true", help="resume the most recent session")
    p.add_argument("--compact", nargs="?", const="", metavar="FOCUS",
                   help="headless: compact the session that --continue or --resume names (optionally with a "
                        "focus), print the compaction and exit; no prompt is sent")
    p.add_argument("--preview", nargs="?", const="", metavar="FOCUS",
                   help="with --compact: show what the compaction would do now (per layer, tokens before and "
                        "after, the cache rewrite's cost, the saving per later call, the payback) and change "
                        "nothing")
    p.add_argument("--workspace", metavar="DIR", help="the folder the agent works in (default: current folder)")
    p.add_argument("--trust", action="store_true", default=None,
                   help="trust this workspace: its .env may then set the API key and endpoint, allowed tools and "
                        "the state folder (remembered; the TUI asks instead)")
    add_setting_flags(p.add_argument_group(
        "settings", "each also set by a variable, a workspace .env or the user config file (the flag wins)"))
    return p


# They run no tools and read no key (serve starts ctxtui processes, which shed the key themselves).
READING_COMMANDS = ("replay", "statusline", "watch", "usage", "serve")


def main(argv: list[str] | None = None) -> int:
    make_non_dumpable()       # before any key is read: no same-user process may read our memory or environ
    from_command_line = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv else None
    if from_command_line and command not in READING_COMMANDS:
        # The commands that run tools: start again without the key in the environment (it stays in
        # memory), and keep every tool process from the capabilities that read our memory.
        from agent_core.security.credentials import shed_from_environment  # noqa: PLC0415  (start-up time: usage)
        shed_from_environment()
        drop_tool_capabilities()
    run_command = SUBCOMMANDS.get(command or "")
    if run_command is not None:
        return run_command(argv[1:])
    return _run(argv)


def _run(argv: list[str]) -> int:
    """`ctxtui [options]`: the TUI, or with --headless the run without a screen."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.compact is not None and not args.headless:
        parser.error("--compact is for --headless (in the TUI, type /compact [focus])")
    if args.input_format != "text" and not args.headless:
        parser.error("--input-format is for --headless (the TUI reads its prompts from the keyboard)")
    if args.headless:
        from app.cli.headless import main as headless_main  # noqa: PLC0415  (start-up time: no Textual)
        return headless_main(args)
    from app.tui import heap  # noqa: PLC0415  (start-up time)
    heap.hold()               # until the first frame (heap.py): Textual and the app load without collections
    try:
        from app.tui.launch import run_tui  # noqa: PLC0415  (start-up time)
        return run_tui(args)
    finally:
        heap.release()


# Each front-end is imported only when chosen, so usage and headless never load Textual (or the
# model client) and start fast.

def _acp(argv: list[str]) -> int:
    from app.acp.main import main as acp_main  # noqa: PLC0415  (start-up time)
    return acp_main(argv)


def _statusline(argv: list[str]) -> int:
    from app.cli.statusline import main as statusline_main  # noqa: PLC0415  (start-up time)
    return statusline_main(argv)


def _serve(argv: list[str]) -> int:
    from app.serve.cli import main as serve_main  # noqa: PLC0415  (start-up time)
    return serve_main(argv)


def _usage(argv: list[str]) -> int:
    from app.cli.usage import main as usage_main  # noqa: PLC0415  (start-up time)
    return usage_main(argv)


def _watch(argv: list[str]) -> int:
    from app.cli.watch import main as watch_main  # noqa: PLC0415  (start-up time)
    return watch_main(argv)


def _replay(argv: list[str]) -> int:
    """`ctxtui replay`: the screen in a terminal, else text or --json (without loading Textual)."""
    from app.cli.replay import parse_options, run  # noqa: PLC0415  (start-up time)
    options = parse_options(argv)
    if isinstance(options, int):
        return options
    if not options.json and sys.stdout.isatty():
        try:
            from app.replay.app import run_app  # noqa: PLC0415  (start-up time: Textual only for the screen)
        except ImportError:   # a build without the screen: the text report instead
            return run(options)
        return run_app(options)
    return run(options)


SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {
    "acp": _acp, "replay": _replay, "statusline": _statusline, "serve": _serve, "usage": _usage, "watch": _watch}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
