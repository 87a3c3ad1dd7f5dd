"""`ctxtui acp`: parse the flags, take stdio for the protocol, serve ACP until the client goes away.

Exit codes: 0 when the client closed stdin; 2 bad usage; 128+N stopped by signal N (SIGINT,
SIGTERM, SIGHUP): the running turns are cancelled and every session's log closed whole and
resumable. Logs go to stderr only, secrets scrubbed (stdout is the protocol: stdio.py).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import TYPE_CHECKING, Sequence, cast

if TYPE_CHECKING:
    from acp.interfaces import Agent

from compaction.scrub import scrub

from agent_core.security.visible_text import visible
from agent_core.settings_table import BY_NAME, add_setting_flags

DESCRIPTION = """\
Serve ctxtui as an Agent Client Protocol (ACP) agent over stdio, for editors such as Zed, JetBrains
IDEs or Toad: the same loop, compaction engine, sessions and logs as the TUI. The editor starts
this command and talks JSON-RPC on its stdin and stdout; each session works in the folder the
editor names (its cwd), is resumable with `ctxtui --resume ID` and can be followed with
`ctxtui watch`. After every model call and every compaction a usage_update says the context used,
the window and the session's cost; each compaction's layer, trigger, tokens and cost are in its
_meta. Tools set to ask (bash, write_file, edit_file, MCP tools) are asked of the editor
(session/request_permission). Prompts may be `/compact [FOCUS]`. With no ANTHROPIC_API_KEY it
runs on the offline demo model. Guide: docs/acp.md."""

EPILOG = """\
example (Zed's settings.json):
  "agent_servers": {"ctxtui": {"command": "ctxtui", "args": ["acp"], "env": {}}}

Every other setting comes from the environment, the workspace's .env (trusted workspaces only for
the key, endpoint, allowed tools and state folder) and the user config file, as for `ctxtui`
(`ctxtui --help` lists the variables).

exit codes: 0 the client closed the connection, 2 bad usage, 130 / 143 / 129 stopped by SIGINT /
            SIGTERM / SIGHUP (sessions stay resumable)
"""
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


# The settings an editor may pass to `ctxtui acp` (flags from the one settings table; a session's own
# workspace .env and the user config file fill in the rest).
ACP_SETTINGS = ("model", "allow", "mcp_config", "home", "context_window", "autocompact_pct", "policy", "engine",
                "cache_ttl", "max_turns", "max_budget_usd", "base_url")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ctxtui acp", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_setting_flags(p, tuple(BY_NAME[n] for n in ACP_SETTINGS))
    return p


class _ScrubbingFormatter(logging.Formatter):
    """Log lines with every known secret replaced and control characters shown, never obeyed."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(scrub(super().format(record)))


def _logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_ScrubbingFormatter("ctxtui acp: %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    options = build_parser().parse_args(list(sys.argv[2:] if argv is None else argv))
    _logging()
    from app.acp.stdio import take_stdio  # noqa: PLC0415  (start-up time: after --help, no pipes touched)
    proto_in, proto_out = take_stdio()
    received: list[int] = []
    asyncio.run(_serve(options, proto_in, proto_out, received))
    return 128 + received[0] if received else 0


async def _serve(options: argparse.Namespace, proto_in, proto_out, received: list[int]) -> None:
    # The SDK (pydantic models, half a second) loads only here: `ctxtui acp --help` stays fast.
    from acp import run_agent  # noqa: PLC0415  (start-up time)

    from app.acp.server import CtxtuiAgent  # noqa: PLC0415  (start-up time)
    from app.acp.stdio import streams  # noqa: PLC0415  (start-up time)

    agent = CtxtuiAgent(options)
    reader, writer = await streams(proto_in, proto_out)
    # The SDK's Agent protocol lists every method ACP has; its router serves those an agent
    # defines and answers "method not found" for the rest (acp/router.py, _make_func), so an agent
    # of a few methods is one the SDK takes, though not one its Protocol describes.
    serving = asyncio.ensure_future(run_agent(cast("Agent", agent), writer, reader))
    loop = asyncio.get_running_loop()

    def stop(signum: int) -> None:
        if not received:
            received.append(signum)
        serving.cancel()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop, sig)
    try:
        await serving
    except asyncio.CancelledError:
        pass
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
        await agent.close_all()
