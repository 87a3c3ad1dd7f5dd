"""`ctxtui watch`, append -> screen, measured at the terminal (issue 26): the time from writing one
record to a Claude Code log until the bytes that show its figure reach the terminal.

The real command runs on a pseudo-terminal of 120x40 that this script owns (no tmux: the bytes
are read from the master side as they are written, with their arrival time). Each append is a
response whose context figure (input + cache read + cache write) is a number not shown before;
the watch's context pane prints it exactly ("123,456"), so its first appearance in the output
is the moment it was on screen. Two logs: a Claude Code one (generated records) and a ctxtui one
(a real headless demo session, then its own kind of model-call lines). The baseline in the same
run is `tail -f` on the same pseudo-terminal: the floor of file -> terminal for a program that
shows the line it reads.

--root DIR runs the watch of another checkout (e.g. `git worktree add /tmp/old HEAD~3`).

Usage: .venv/bin/python bench/watch_terminal.py [--appends 25] [--interval 0.3] [--root DIR]
Prints the medians and their ratio; nothing is asserted.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import select
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = "claude-sonnet-4-5-20250929"
SIZE = (40, 120)          # rows, columns


def ctxtui_record(n: int, context: int) -> str:
    """A main model call as ctxtui's session log writes it (an `event` line)."""
    usage = {"input_tokens": 8, "output_tokens": 300, "cache_creation_input_tokens": 1_500,
             "cache_read_input_tokens": context - 1_508,
             "cache_creation": {"ephemeral_5m_input_tokens": 1_500, "ephemeral_1h_input_tokens": 0}}
    return json.dumps({"t": "event", "at": time.time(), "event": {
        "type": "model_call", "message_id": f"msg_wt_{n}", "model": "claude-sonnet-4-5", "purpose": "main",
        "usage": usage, "duration_s": 0.5}}, separators=(",", ":")) + "\n"


def ctxtui_log(tmp: Path, env: dict[str, str]) -> Path:
    """A real ctxtui session log: one headless demo turn in a folder of its own."""
    ws = tmp / "ws"
    ws.mkdir(parents=True)
    home = tmp / "ctxtui-home"
    subprocess.run([sys.executable, "-m", "app.cli.main", "--headless", "--model", "demo", "-p", "hi",
                    "--workspace", str(ws)], cwd=str(ROOT), env={**env, "CTXTUI_HOME": str(home)},
                   capture_output=True, check=True, timeout=120)
    return next(home.rglob("sessions/*.jsonl"))


def record(n: int, context: int) -> str:
    usage = {"input_tokens": 8, "output_tokens": 300, "cache_creation_input_tokens": 1_500,
             "cache_read_input_tokens": context - 1_508}
    return json.dumps({"type": "assistant", "uuid": f"w{n}", "timestamp": "2025-06-14T10:00:00.000Z",
                       "isSidechain": False, "sessionId": "watch-terminal", "requestId": f"wreq{n}",
                       "message": {"id": f"wmsg{n}", "type": "message", "role": "assistant", "model": MODEL,
                                   "content": [{"type": "text", "text": "ok"}], "usage": usage}}) + "\n"


def _controlling_terminal() -> None:
    """In the child: a session of its own with the pseudo-terminal as its terminal, so that the
    terminal closing (this script ending, however it ends) hangs it up, as a closed window does."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """A command on a pseudo-terminal of SIZE; `wait_for` reads its output until a text shows."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path = ROOT) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[0], SIZE[1], 0, 0))
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=str(cwd),
                                     preexec_fn=_controlling_terminal)
        os.close(slave)
        self.fd = master

    def wait_for(self, text: str, timeout: float = 10.0) -> float | None:
        """The monotonic time at which `text` (UTF-8) first arrived after the last call; None on timeout."""
        want = text.encode()
        end = time.perf_counter() + timeout
        tail = b""
        while time.perf_counter() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(self.fd, 1 << 16)
            except OSError:
                return None
            now = time.perf_counter()
            window = tail + chunk
            if want in window:
                return now
            tail = window[-(len(want) + 64):]
        return None

    def drain(self, seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.01)
            if ready:
                try:
                    os.read(self.fd, 1 << 16)
                except OSError:
                    return

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self.fd)


def latencies(argv: list[str], log: Path, appends: int, interval: float, start: int, show,
              env: dict[str, str], ready: str, cwd: Path = ROOT, make=record) -> list[float]:
    term = Terminal(argv, env, cwd)
    out: list[float] = []
    try:
        if term.wait_for(ready, timeout=30) is None:
            sys.exit(f"{argv[0]} did not show {ready!r} within 30 s")
        term.drain(1.0)
        for i in range(appends):
            context = start + 1_000 * (i + 1) + 7          # a figure shown nowhere before
            line = make(i + 1, context)
            text = show(context, i + 1)
            with open(log, "a", encoding="utf-8") as f:
                t0 = time.perf_counter()
                f.write(line)
            seen = term.wait_for(text)
            if seen is not None:
                out.append(seen - t0)
            term.drain(interval)
    finally:
        term.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--appends", type=int, default=25)
    ap.add_argument("--interval", type=float, default=0.3, help="seconds between appends")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose watch is run")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ctxtui-bench-term-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_"))}
    env.update(TERM="xterm-256color", COLORTERM="truecolor", CTXTUI_HOME=str(tmp / "home"),
               PYTHONPYCACHEPREFIX=str(tmp / "pyc"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        ours_log = tmp / "ours" / "watch-terminal.jsonl"
        tail_log = tmp / "tail" / "watch-terminal.jsonl"
        for p in (ours_log, tail_log):
            p.parent.mkdir(parents=True)
            p.write_text(record(0, 50_007))
        ours = latencies([sys.executable, "-m", "app.cli.main", "watch", str(ours_log)], ours_log, args.appends,
                         args.interval, 100_000, lambda c, n: f"{c:,}", env, ready="50,007", cwd=args.root)
        own_log = ctxtui_log(tmp / "own", env)
        with open(own_log, "a", encoding="utf-8") as f:
            f.write(ctxtui_record(0, 50_007))
        own = latencies([sys.executable, "-m", "app.cli.main", "watch", str(own_log)], own_log, args.appends,
                        # ctxtui's figure is the context after the answer: its output tokens too
                        args.interval, 100_000, lambda c, n: f"{c + 300:,}", env, ready="50,307", cwd=args.root,
                        make=ctxtui_record)
        floor = latencies(["tail", "-n", "1", "-f", str(tail_log)], tail_log, args.appends, args.interval,
                          100_000, lambda c, n: f'"wreq{n}"', env, ready="wreq0")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def med(xs: list[float]) -> float:
        return statistics.median(xs) if xs else float("nan")

    def line(name: str, xs: list[float]) -> str:
        if not xs:
            return f"  {name:<38} no update seen"
        return (f"  {name:<38} {med(xs) * 1000:6.1f} ms median (min {min(xs) * 1000:.1f}, "
                f"max {max(xs) * 1000:.1f}, {len(xs)} of {args.appends} seen)")

    print(f"append -> bytes at the terminal ({SIZE[1]}x{SIZE[0]} pseudo-terminal), {args.appends} appends")
    print(line("ctxtui watch, a Claude Code log", ours))
    print(line("ctxtui watch, a ctxtui log", own))
    print(line("tail -f (the line itself), the floor", floor))
    if ours and floor:
        print(f"  ctxtui watch / tail -f: {med(ours) / med(floor):.1f}x")


if __name__ == "__main__":
    main()
