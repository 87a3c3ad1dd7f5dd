"""`ctxtui serve`: its flags, help and exit codes. Serves the TUI or watch in a browser tab.

Parses and checks everything (the address, the command to serve) before it loads textual-serve,
which loads rich: `ctxtui serve --help` and a usage error stay fast, and the import-linter contract
on the entry points holds for this module too."""
from __future__ import annotations

import argparse
import asyncio
import sys
from typing import NoReturn, Sequence, TextIO

from app.serve.command import NotServable, check_servable, ctxtui_argv
from app.serve.loopback import DEFAULT_HOST, NotLoopback, bind

DEFAULT_PORT = 8000

DESCRIPTION = """\
Serve ctxtui's TUI, or `ctxtui watch`, in a browser: each tab that opens the printed URL starts
its own ctxtui process (textual-serve runs it and draws its screen in the page). The server listens
on this machine's loopback address only, and every request must carry the random token of the URL
it prints and come from that address; the websocket that starts a process must also come from the
page itself (its Origin)."""

EPILOG = """\
what is served:
  ctxtui serve                         the TUI, in the current folder
  ctxtui serve -- OPTIONS              the TUI with ctxtui's OPTIONS (see `ctxtui --help`), e.g.
                                       ctxtui serve -- --workspace ~/src/proj --model demo
  ctxtui serve watch [PATH] [FLAGS]    `ctxtui watch` (see `ctxtui watch --help`)
  ctxtui serve -- watch [PATH] [FLAGS] the same
  Commands without a screen (--headless, usage, statusline, replay) cannot be served.

the URL:
  printed once on start, http://127.0.0.1:PORT/TOKEN/ (a new token each start). Anyone with it can
  run the agent in your workspace: do not share it. A request without it gets 403.

from another machine:
  the server never listens on a network address. Forward the port over ssh instead, with the same
  port number on both ends, and open the printed URL on your machine:
    ssh -L 8000:127.0.0.1:8000 you@server     then, on the server: ctxtui serve --port 8000

environment: as for the command served (ANTHROPIC_API_KEY, CTXTUI_HOME, ...; `ctxtui --help`)

exit codes: 0 stopped (Ctrl+C or SIGTERM), 2 bad usage (unknown flag, a non-loopback --host, a
command without a screen) or the port cannot be used (in use, no permission)

more: docs/serve.md"""

USAGE = "ctxtui serve [-h] [--port N] [--host ADDR] [watch [WATCH-ARGS ...] | -- CTXTUI-ARGS ...]"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's exit code 2, with a hint
        self.print_usage(sys.stderr)
        self.exit(2, f"ctxtui serve: error: {message}\n(see `ctxtui serve --help`)\n")


def _port(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = -1
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"not a port: {value!r} (0 to 65535; 0 takes a free one)")
    return n


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ctxtui serve", usage=USAGE, description=DESCRIPTION, epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, metavar="N",
                   help=f"the port to listen on (default {DEFAULT_PORT}; 0: any free port, printed)")
    p.add_argument("--host", default=DEFAULT_HOST, metavar="ADDR",
                   help=f"the loopback address to listen on (default {DEFAULT_HOST}; also localhost or ::1). "
                        "Any other address is refused: use ssh -L to reach the server from elsewhere")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="watch ...",
                   help="serve `ctxtui watch` with these arguments instead of the TUI")
    return p


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    """(serve's options, the ctxtui arguments to serve). Raises SystemExit on --help or a usage error."""
    argv = list(argv)
    own, served = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = build_parser()
    args = parser.parse_args(own)
    command = list(args.command) + served
    if args.command and args.command[0] != "watch":
        parser.error(f"unrecognized arguments: {' '.join(args.command)} (ctxtui's options go after `--`)")
    try:
        check_servable(command)
    except NotServable as e:
        parser.error(str(e))
    return args, command


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        args, command = parse(sys.argv[1:] if argv is None else argv)
    except SystemExit as e:          # --help (0) or a usage error (2, message already printed)
        return int(e.code or 0)
    try:
        bound = bind(args.host, args.port)
    except NotLoopback as e:
        print(f"ctxtui serve: error: --host {e}: ctxtui serve listens on this machine only; from another "
              f"machine, forward the port with ssh -L (see `ctxtui serve --help`)", file=err)
        return 2
    except OSError as e:
        print(f"ctxtui serve: error: cannot listen on {args.host} port {args.port}: {e.strerror or e} "
              f"(another port: --port N, or --port 0 for any free one)", file=err)
        return 2
    from app.serve.access import Access, new_token  # noqa: PLC0415  (start-up time: aiohttp only to serve)
    from app.serve.server import GuardedServer  # noqa: PLC0415  (start-up time: textual-serve loads rich)

    access = Access.for_address(new_token(), bound.ip, bound.port)
    what = "ctxtui watch" if command[:1] == ["watch"] else "ctxtui"
    server = GuardedServer(ctxtui_argv(command), bound, access, title=what)

    def started() -> None:
        print(f"ctxtui serve: {what} at {server.url}\n"
              f"  (each tab runs its own {what}; the URL carries the access token, keep it to yourself; "
              f"Ctrl+C stops)", file=out, flush=True)

    try:
        asyncio.run(server.run(asyncio.Event(), started=started))
    except KeyboardInterrupt:
        pass
    finally:
        bound.sock.close()
    return 0
