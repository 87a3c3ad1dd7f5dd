"""Run the fake API standalone: `python -m tests.fake_anthropic [--port N] [--script FILE] ...`.

Prints `FAKE_ANTHROPIC_URL=<base url>` as its first stdout line (and writes the port to
--port-file if given), then serves until SIGTERM or SIGINT. Loopback only.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from tests.fake_anthropic.script import echo_responder, load_script
from tests.fake_anthropic.server import FakeAnthropic

RESPONDERS = {"echo": echo_responder, "none": None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fake_anthropic", description=__doc__)
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = any free port)")
    p.add_argument("--script", help="JSON file: a list of items, or {'script': [...], options...}")
    p.add_argument("--responder", choices=sorted(RESPONDERS), default=None,
                   help="who answers once the script is empty (default: echo)")
    p.add_argument("--context-window", type=int, default=None, help="answer prompt-too-long above this")
    p.add_argument("--max-output", type=int, default=None, help="reject max_tokens above this")
    p.add_argument("--api-key", default=None, help="accept only this x-api-key (default: any non-empty)")
    p.add_argument("--record", default=None, help="append each request as a JSON line to this file (0600)")
    p.add_argument("--port-file", default=None, help="write the port number to this file once listening")
    a = p.parse_args(argv)

    items, opts = load_script(a.script) if a.script else ([], {})
    responder = RESPONDERS[a.responder or opts.get("responder", "echo")]
    fake = FakeAnthropic(items, responder=responder,
                         context_window=a.context_window if a.context_window is not None
                         else opts.get("context_window"),
                         max_output=a.max_output if a.max_output is not None else opts.get("max_output"),
                         api_key=a.api_key, record_path=a.record, port=a.port,
                         min_cache_tokens=int(opts.get("min_cache_tokens", 0)),
                         require_tools_for_tool_blocks=bool(opts.get("require_tools_for_tool_blocks", True)),
                         reject_betas=list(opts.get("reject_betas") or ()))
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    fake.start()
    try:
        if a.port_file:
            tmp = a.port_file + ".tmp"
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                f.write(str(fake.port))
            os.replace(tmp, a.port_file)
        print(f"FAKE_ANTHROPIC_URL={fake.base_url}", flush=True)
        done.wait()
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
