"""`ctxtui --headless`: the same loop and engine for scripts, no screen (never imports textual).

Exit codes: 0 done; 1 the run failed (API error, budget or turn limit, blocking); 2 bad usage or
configuration; 130 interrupted (the session is left valid and resumable).
"""
from __future__ import annotations

import asyncio
import json
import signal
import sys
from typing import Any, TextIO

from . import events as ev
from .config import ConfigError, load_config

OK_STOPS = frozenset({"end_turn", "stop_sequence", "compacted"})
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def read_prompt(arg: str | None, stdin: TextIO) -> str | None:
    if arg is not None and arg != "-":
        return arg
    if arg == "-" or not stdin.isatty():
        return stdin.read()
    return None


class _Output:
    """Turns events into the chosen output format."""

    def __init__(self, fmt: str, out: TextIO, err: TextIO) -> None:
        self.fmt, self.out, self.err = fmt, out, err
        self.text: list[str] = []
        self.compactions: list[dict] = []
        self.errors: list[dict] = []
        self.context: dict | None = None
        self.cost: dict | None = None
        self._line_open = False

    def _json(self, d: dict) -> None:
        self.out.write(json.dumps(d, ensure_ascii=False, default=str) + "\n")
        self.out.flush()

    def _note(self, line: str) -> None:
        if self._line_open:
            self.out.write("\n")
            self.out.flush()
            self._line_open = False
        self.err.write(line + "\n")
        self.err.flush()

    def event(self, e: ev.Event) -> None:
        d = e.to_dict()
        if isinstance(e, ev.TextDelta):
            self.text.append(e.text)
        elif isinstance(e, ev.Compaction):
            self.compactions.append(d)
        elif isinstance(e, ev.Error):
            self.errors.append(d)
        elif isinstance(e, ev.ContextUpdate):
            self.context = d
        elif isinstance(e, ev.CostUpdate):
            self.cost = d
        if self.fmt == "stream-json":
            self._json(d)
        elif self.fmt == "text":
            self._text_event(e)

    def _text_event(self, e: ev.Event) -> None:
        if isinstance(e, ev.TextDelta):
            self.out.write(e.text)
            self.out.flush()
            self._line_open = not e.text.endswith("\n")
        elif isinstance(e, ev.Compaction):
            self._note(f"[compaction] {e.layer} ({e.trigger}): {e.tokens_before:,} -> {e.tokens_after:,} tokens"
                       + (f"; transcript {e.transcript_path}" if e.transcript_path else ""))
        elif isinstance(e, ev.BreakerTripped):
            self._note(f"[breaker] {e.breaker}: {e.reason}")
        elif isinstance(e, ev.Error):
            self._note(f"[error] {e.kind}: {e.message}")
        elif isinstance(e, ev.Notice):
            self._note(f"[note] {e.message}")
        elif isinstance(e, ev.StreamRetry):
            self._note(f"[retry {e.attempt}/{e.of}] {e.message}; the partial answer above is discarded")
        elif isinstance(e, ev.ToolCall):
            self._note(f"[tool] {e.name} {json.dumps(e.input, ensure_ascii=False)[:200]}")
        elif isinstance(e, ev.ToolResult) and e.is_error:
            self._note(f"[tool error] {e.name}: {e.preview[:300]}")

    def finish(self, result: dict) -> None:
        if self.fmt == "stream-json":
            self._json(result)
        elif self.fmt == "json":
            self._json({**result, "text": "".join(self.text), "context": self.context, "cost": self.cost,
                        "compactions": self.compactions, "errors": self.errors})
        else:
            c = self.context or {}
            total = result.get("total_usd")
            cost = "unknown" if total is None else f"${total:.4f}"
            self._note(f"[done] {result['stop_reason']} · turns {result['turns']} · context "
                       f"{c.get('tokens', 0):,}/{c.get('window', 0):,} tokens ({c.get('state', '?')}, "
                       f"{c.get('percent_left', 0)}% left before auto-compact) · cost {cost} · "
                       f"session {result['session_id']}")


async def run_headless(agent: Any, prompt: str, output: _Output) -> dict:
    """Drive one run; SIGINT cancels the turn (history repaired) instead of killing the process."""
    loop = asyncio.get_running_loop()
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted = True
        agent.cancel()

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError):  # pragma: no cover - not on this platform
        pass
    stop_reason = "error"
    try:
        for e in (agent.context_event(),):
            output.event(e)
        async for e in agent.run(prompt):
            output.event(e)
            if isinstance(e, ev.TurnFinished):
                stop_reason = e.stop_reason
        output.event(agent.cost_event())
    finally:
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError):  # pragma: no cover
            pass
        await agent.aclose()
    cost = agent.cost
    return {"type": "result", "stop_reason": stop_reason, "turns": agent.turns, "session_id": agent.session_id,
            "total_usd": cost.total_usd, "is_error": stop_reason not in OK_STOPS,
            "interrupted": interrupted}


def main(args: Any, stdin: TextIO | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None,
         environ: dict | None = None) -> int:
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    from .factory import build_agent

    try:
        config = load_config(args, environ=environ)
    except ConfigError as e:
        stderr.write(f"ctxtui: {e}\n")
        return EXIT_USAGE
    prompt = read_prompt(getattr(args, "prompt", None), stdin)
    if prompt is None or not prompt.strip():
        stderr.write("ctxtui: --headless needs a prompt: pass -p \"PROMPT\" or pipe it on stdin.\n")
        return EXIT_USAGE
    try:
        agent = build_agent(config, ask=None, resume=getattr(args, "resume", None),
                            continue_=getattr(args, "continue_", False))
    except ConfigError as e:
        stderr.write(f"ctxtui: {e}\n")
        return EXIT_USAGE
    output = _Output(getattr(args, "output_format", "text") or "text", stdout, stderr)
    if agent.info.offline:
        output.event(ev.Notice("No ANTHROPIC_API_KEY: running on the offline demo model."))
    result = asyncio.run(run_headless(agent, prompt, output))
    output.finish(result)
    if result.pop("interrupted") or result["stop_reason"] == "cancelled":
        return EXIT_INTERRUPTED
    return EXIT_FAILED if result["is_error"] else EXIT_OK
