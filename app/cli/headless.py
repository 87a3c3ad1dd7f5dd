"""`ctxtui --headless`: the same loop and engine for scripts, no screen (never imports textual).

`--compact [FOCUS]` (with --continue or --resume) compacts the resumed session instead of running a
prompt, prints the compaction like a run does and exits: how a script recovers from a context that
is full or a breaker that stopped automatic compaction. `--compact --preview [FOCUS]` prints what
that compaction would do, cost and save instead, and changes nothing (one object in the JSON
formats, `"preview": true`).

Exit codes: 0 done; 1 the run failed (API error, budget or turn limit, blocking, the session log
could not be written, a --compact that could not shrink the session); 2 bad usage or configuration
(a session in use by another ctxtui included);
128+N stopped by signal N during the run: 130 SIGINT, 143 SIGTERM, 129 SIGHUP (the turn is
cancelled, the bash tool's processes killed, the session left valid and resumable); 141 (128 +
SIGPIPE) stdout's reader went away (`ctxtui --headless -p ... | head -1`): the turn is stopped the
same way, without a traceback, and the session closed whole and resumable.

`--input-format stream-json` reads the prompts from stdin, one JSON user message a line
(app/cli/stream_input.py), and runs each as a turn of one session in this one process; each turn
prints what a single prompt prints (its context event first, its result last). A line that is not
a user message is an `error` event of kind `input` (in the text format a note on stderr) and the
next line runs. The end of input ends the run: exit 0 when every line ran as a turn that ended
well, 1 when a line was refused or a turn failed, 128+N when a signal stopped it.

The json format's `text` is what the completed answers said: the partial text of an answer whose
stream broke off and was sent again (`StreamRetry`), or that ended in an error, is left out (the
text format has already printed it, and said that it is discarded). A cancelled answer's partial
text stays, as it does in the history.

The model's answer, tool names, inputs and outputs, and error messages are someone else's text:
the text format passes the answer through `visible` and every note through it too (tool fields
through `one_line`), so an escape sequence is shown, never obeyed; the JSON formats escape the C0
controls (json) and DEL, C1 and bidi overrides (`json_escaped`), and keep the exact text.
"""
from __future__ import annotations

import argparse
import asyncio
import errno
import json
import os
import signal
import sys
import threading
from typing import Any, Callable, TextIO

from agent_core import events as ev
from agent_core.config import Config, ConfigError, load_config
from agent_core.loop.agent import Agent
from agent_core.loop.compaction_preview import PreviewError
from agent_core.loop.factory import build_agent
from agent_core.sessions.session_log import SessionWriteError
from agent_core.security.trust import remember as remember_trust
from agent_core.security.visible_text import json_escaped, one_line, visible
from agent_core.sessions.valid_text import decode_input, valid_text
from app.preview_text import preview_lines
from app.cli.stream_input import InputLineError, StdinLines, parse_input_line

OK_STOPS = frozenset({"end_turn", "stop_sequence", "compacted"})
RECOVER_HINT = "From a script: ctxtui --headless --continue --compact [FOCUS]."
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_PIPE = 128 + signal.SIGPIPE    # 141, what a shell reports for a writer killed by SIGPIPE
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def read_prompt(arg: str | None, stdin: TextIO) -> str | None:
    """The prompt from -p, or stdin read as bytes: input that is not UTF-8 becomes U+FFFD."""
    if arg is not None and arg != "-":
        return valid_text(arg)
    if arg == "-" or not stdin.isatty():
        raw = getattr(stdin, "buffer", None)
        return decode_input(raw.read() if raw is not None else stdin.read())
    return None


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP (a closed terminal) from start-up to exit. During the run each
    one cancels the turn: the history is repaired, the bash tool's process group killed, and the
    run exits 128+N. Before the run starts one means it never starts. After the turn has ended
    one changes nothing (the output is finished, the exit code is the run's) and puts the default
    handlers back, so a second one stops the process at once (say stdout's reader is stuck)."""

    def __init__(self) -> None:
        self.received: int | None = None    # the first signal that stopped the run
        self._cancel: Callable[[], object] | None = None
        self._over = False
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return   # signals reach the main thread only (headless driven from a test thread)
        for sig in STOP_SIGNALS:
            self._old[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def while_running(self, cancel: Callable[[], object] | None) -> None:
        """What a signal does while the run goes on (None: the run is over)."""
        self._cancel = cancel
        self._over = cancel is None

    def _handle(self, signum: int, frame: Any) -> None:
        if self._over:
            for sig in STOP_SIGNALS:
                signal.signal(sig, signal.SIG_DFL)
            return
        if self.received is None:
            self.received = signum
        if self._cancel is not None:
            try:
                self._cancel()
            except RuntimeError:   # the loop closed just now: the run is over anyway
                pass

    def reader_gone(self) -> None:
        """stdout's reader went away: as a SIGPIPE would, it stops the run (the same way as the
        other stop signals: the turn is cancelled and the session left valid)."""
        if self.received is None:
            self.received = signal.SIGPIPE
        if self._cancel is not None and not self._over:
            try:
                self._cancel()
            except RuntimeError:
                pass

    def exit_code(self) -> int | None:
        return None if self.received is None else 128 + self.received


class _Output:
    """Turns events into the chosen output format."""

    def __init__(self, fmt: str, out: TextIO, err: TextIO) -> None:
        self.fmt, self.out, self.err = fmt, out, err
        self.text: list[str] = []         # what the completed answers said (json's `text`)
        self._answer: list[str] = []      # the answer being streamed, until it completes
        self.closed = False               # stdout's reader went away (EPIPE): nothing more is written there
        self.on_closed: Callable[[], None] | None = None
        self._err_closed = False
        self.compactions: list[dict] = []
        self.cache_misses: list[dict] = []
        self.errors: list[dict] = []
        self.context: dict | None = None
        self.cost: dict | None = None
        self._line_open = False
        # What the json summary keeps of each kind of event (as its dict); each handler takes its key's kind.
        self._keep: dict[type[ev.Event], Callable[[Any, dict], None]] = {
            ev.TextDelta: lambda e, d: self._answer.append(e.text),
            ev.StreamRetry: lambda e, d: self._answer.clear(),      # that answer is sent again
            ev.AssistantDone: lambda e, d: self._answer_done(),
            ev.TurnFinished: self._turn_finished,
            ev.Compaction: lambda e, d: self.compactions.append(d),
            ev.CacheMiss: lambda e, d: self.cache_misses.append(d),
            ev.Error: lambda e, d: self.errors.append(d),
            ev.ContextUpdate: self._keep_context,
            ev.CostUpdate: self._keep_cost,
        }
        # How the text format shows each kind: the answer on stdout, the rest as notes on stderr.
        self._show: dict[type[ev.Event], Callable[[Any], None]] = {
            ev.TextDelta: self._show_text,
            ev.Compaction: lambda e: self._note(
                f"[compaction] {e.layer} ({e.trigger}): {e.tokens_before:,} -> {e.tokens_after:,} tokens"
                + (f"; transcript {e.transcript_path}" if e.transcript_path else "")),
            ev.BreakerTripped: lambda e: self._note(f"[breaker] {e.breaker}: {e.reason}"
                                                    + (f" {RECOVER_HINT}" if e.breaker != "rejected" else "")),
            ev.Error: lambda e: self._note(f"[error] {e.kind}: {e.message}"
                                           + (f" {RECOVER_HINT}" if e.kind == "blocking" else "")),
            ev.Notice: lambda e: self._note(f"[note] {e.message}"),
            ev.CacheMiss: lambda e: self._note(f"[cache] {e.text}"),
            ev.StreamRetry: lambda e: self._note(
                f"[retry {e.attempt}/{e.of}] {e.message}; the partial answer above is discarded"),
            ev.ToolCall: lambda e: self._note(
                f"[tool] {one_line(e.name)} {one_line(json.dumps(e.input, ensure_ascii=False)[:200])}"),
            ev.ToolResult: lambda e: self._note(
                f"[tool error] {one_line(e.name)}: {one_line(e.preview[:300])}") if e.is_error else None,
        }

    def new_turn(self) -> None:
        """Forget the last turn's text, compactions and errors (json's summary is per turn)."""
        self.text, self._answer, self.compactions, self.errors = [], [], [], []
        self.cache_misses = []

    def input_error(self, e: ev.Error) -> None:
        """A refused input line: an `error` event in the stream, an object of its own in json
        (there is no turn for it to join), a note in text."""
        if self.fmt == "json":
            self._json(e.to_dict())
        else:
            self.event(e)

    def _answer_done(self) -> None:
        self.text += self._answer
        self._answer = []

    def _turn_finished(self, e: ev.TurnFinished, d: dict) -> None:
        if e.stop_reason == "cancelled":
            self._answer_done()    # the history keeps a cancelled answer's partial text too
        self._answer = []          # else it was dropped: an error ended that call

    def _write(self, text: str) -> None:
        """Write all of `text` and flush, or nothing once stdout's reader has gone away."""
        if self.closed:
            return
        try:
            self._write_all(text)
        except OSError as e:
            if not _is_broken_pipe(e):
                raise
            self._reader_gone()

    def _reader_gone(self) -> None:
        """stdout's reader went away (`| head -1`): write no more there, and stop the run."""
        self.closed = True
        _silence(self.out)
        if self.on_closed is not None:
            self.on_closed()

    def _write_all(self, text: str) -> None:
        """A signal can cut a large write to a pipe short, and the text layer drops the rest
        without a word: write the bytes until all are out."""
        text = valid_text(text)
        buf = getattr(self.out, "buffer", None)
        if buf is None:
            self.out.write(text)
            self.out.flush()
            return
        self.out.flush()
        view = memoryview(text.encode(self.out.encoding or "utf-8", errors="replace"))
        while view:
            view = view[buf.write(view):]
        buf.flush()

    def _json(self, d: dict) -> None:
        self._write(json_escaped(json.dumps(d, ensure_ascii=False, default=str)) + "\n")

    def startup_notice(self, message: str) -> None:
        """Said once before the run: a notice event first in stream-json, a note on stderr otherwise
        (json's one object on stdout has no place for it)."""
        if self.fmt == "json":
            self._note(f"[note] {message}")
        else:
            self.event(ev.Notice(message))

    def load_warnings(self, lines: list[str]) -> None:
        """What resuming found wrong with the log and repaired, one line per kind, on stderr."""
        for line in lines:
            self._note(f"ctxtui: session log: {line}")

    def _note(self, line: str) -> None:
        if self._line_open:
            self._line_open = False
            self._write("\n")
        if self._err_closed:
            return
        try:
            self.err.write(visible(line) + "\n")
            self.err.flush()
        except OSError as e:
            if not _is_broken_pipe(e):
                raise
            self._err_closed = True   # `2>&1 | head`: stdout goes with it and stops the run
            _silence(self.err)

    def event(self, e: ev.Event) -> None:
        d = e.to_dict()
        keep = ev.handler_for(self._keep, e)
        if keep is not None:
            keep(e, d)
        if self.fmt == "stream-json":
            self._json(d)
        elif self.fmt == "text" and (show := ev.handler_for(self._show, e)) is not None:
            show(e)

    def _keep_context(self, e: ev.Event, d: dict) -> None:
        self.context = d

    def _keep_cost(self, e: ev.Event, d: dict) -> None:
        self.cost = d

    def _show_text(self, e: ev.TextDelta) -> None:
        self._write(visible(e.text))
        self._line_open = not e.text.endswith("\n")

    def preview(self, p: Any, session_id: str) -> None:
        """A compaction preview: one object in the JSON formats, its lines on stdout in text."""
        if self.fmt == "text":
            self._write("".join(line + "\n" for line in preview_lines(p)))
        else:
            self._json({**p.to_dict(), "session_id": session_id})

    def finish(self, result: dict) -> None:
        if self.fmt == "stream-json":
            self._json(result)
        elif self.fmt == "json":
            self._json({**result, "text": "".join(self.text), "context": self.context, "cost": self.cost,
                        "compactions": self.compactions, "cache_misses": self.cache_misses,
                        "errors": self.errors})
        else:
            c = self.context or {}
            total = result.get("total_usd")
            cost = "unknown" if total is None else f"${total:.4f}"
            self._note(f"[done] {result['stop_reason']} · turns {result['turns']} · context "
                       f"{c.get('tokens', 0):,}/{c.get('window', 0):,} tokens ({c.get('state', '?')}, "
                       f"{c.get('percent_left', 0)}% left before auto-compact) · cost {cost} · "
                       f"session {result['session_id']}")


def _is_broken_pipe(e: OSError) -> bool:
    """The reader is gone: a closed pipe or socket, or a terminal that hung up (EIO; its SIGHUP
    sets the exit code)."""
    return isinstance(e, BrokenPipeError) or e.errno in (errno.EPIPE, errno.ECONNRESET, errno.EIO)


def _silence(stream: TextIO) -> None:
    """Point a stream whose reader went away at /dev/null, so that what its buffer still holds
    (flushed at exit) goes nowhere instead of raising again ("Exception ignored ... BrokenPipeError")."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, fd)
        finally:
            os.close(null)
    except OSError:
        pass


async def run_headless(agent: Any, prompt: str | None, output: _Output, signals: StopSignals | None = None,
                       compact: str | None = None) -> dict:
    """Drive one run — the prompt, or with `compact` (a focus, or "") a manual compaction of the
    session; a stop signal cancels the turn (history repaired, tools killed) and the run waits for
    that before the session is closed. A compaction that did not shrink the session ends as
    `not_compacted`, an error."""
    signals = signals or StopSignals()
    loop = asyncio.get_running_loop()
    signals.while_running(lambda: loop.call_soon_threadsafe(agent.cancel))
    try:
        return await _turn(agent, prompt, output, signals, compact)
    finally:
        await agent.aclose()
        signals.while_running(None)


async def _turn(agent: Any, prompt: str | None, output: _Output, signals: StopSignals,
                compact: str | None = None) -> dict:
    """One turn (or the compaction): its context event, its events, its cost event; the result."""
    stop_reason = "cancelled" if signals.received else "error"
    compacted = False
    output.event(agent.context_event())
    if not signals.received:
        events = agent.run(prompt or "") if compact is None else agent.compact(compact or None)
        async for e in events:
            if signals.received and agent.busy:
                agent.cancel()     # a signal that came before the turn's task existed
            output.event(e)
            compacted = compacted or isinstance(e, ev.Compaction)
            if isinstance(e, ev.TurnFinished):
                stop_reason = e.stop_reason
    if compact is not None and stop_reason == "compacted" and not compacted:
        stop_reason = "not_compacted"
    output.event(agent.cost_event())
    cost = agent.cost
    return {"type": "result", "stop_reason": stop_reason, "turns": agent.turns, "session_id": agent.session_id,
            "total_usd": cost.total_usd, "is_error": stop_reason not in OK_STOPS,
            "interrupted": signals.received is not None}


def compact_focus(args: argparse.Namespace) -> str | None:
    """The focus of `--compact [FOCUS]` or `--compact --preview [FOCUS]`; None when there is none."""
    return args.preview or args.compact or None


async def run_preview(agent: Any, focus: str | None, output: _Output) -> bool:
    """`--compact --preview`: print what the compaction would do; the session is closed unchanged.
    False when no preview could be made."""
    try:
        preview = await agent.preview_compact(focus)
    except PreviewError as e:
        output.event(ev.Error("preview", str(e)))
        return False
    finally:
        await agent.aclose()
    output.preview(preview, agent.session_id)
    return True


async def run_stream(agent: Any, stdin: TextIO, output: _Output, signals: StopSignals | None = None) -> bool:
    """Run each prompt of a stream-json stdin as a turn of the one session, until the end of input,
    a stop signal or stdout's reader going away; each turn prints its result. A refused line is an
    `input` error and the next line runs. True when every line ran as a turn that ended well."""
    signals = signals or StopSignals()
    loop = asyncio.get_running_loop()
    lines = StdinLines(stdin, loop)
    reading: asyncio.Future | None = None

    def stop() -> None:    # a signal: cancel the running turn, or the wait for the next line
        agent.cancel()
        if reading is not None:
            reading.cancel()

    signals.while_running(lambda: loop.call_soon_threadsafe(stop))
    all_ok, number = True, 0
    try:
        while not signals.received and not output.closed:
            reading = asyncio.ensure_future(lines.get())
            try:
                line = await reading
            except asyncio.CancelledError:
                if signals.received:
                    break
                raise
            finally:
                reading = None
            if line is None:
                break              # the end of input
            number += 1
            if not line.strip():
                continue
            try:
                prompt = parse_input_line(line)
            except InputLineError as e:
                all_ok = False
                output.input_error(ev.Error("input", f"stdin line {number}: {e}"))
                continue
            output.new_turn()
            result = await _turn(agent, prompt, output, signals)
            output.finish(result)
            all_ok = all_ok and not result["is_error"]
            if result["interrupted"] or result["stop_reason"] == "cancelled":
                break
    finally:
        await agent.aclose()
        signals.while_running(None)
    return all_ok


def input_usage_error(args: argparse.Namespace) -> str | None:
    """What is wrong with an `--input-format stream-json` invocation, or None."""
    if args.input_format != "stream-json":
        return None
    if args.prompt is not None:
        return "--input-format stream-json reads the prompts from stdin, one JSON message a line: drop -p."
    if args.compact is not None:
        return "--input-format stream-json runs prompts; --compact sends none: run them one after the other."
    return None


def compact_usage_error(args: argparse.Namespace) -> str | None:
    """What is wrong with a `--compact` invocation, or None."""
    if args.compact is None:
        return "--preview shows what --compact would do: add --compact." if args.preview is not None else None
    if args.preview and args.compact:
        return "Give the focus once: --compact --preview FOCUS."
    if not (args.resume or args.continue_):
        return ("--compact compacts a saved session: add --continue (the latest session of this workspace) "
                "or --resume ID.")
    if args.prompt is not None:
        return "--compact sends no prompt: compact first, then run the prompt with --continue."
    return None


def main(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None, environ: dict[str, str] | None = None) -> int:
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    if (wrong := compact_usage_error(args) or input_usage_error(args)):
        stderr.write(f"ctxtui: {wrong}\n")
        return EXIT_USAGE
    config = _load_config(args, environ, stderr)
    if config is None:
        return EXIT_USAGE
    streaming = args.input_format == "stream-json"
    if args.compact is not None or streaming:
        prompt = None     # --compact sends no prompt; stream-json's prompts are read as the run goes
    else:
        prompt = read_prompt(args.prompt, stdin)
        if prompt is None or not prompt.strip():
            stderr.write("ctxtui: --headless needs a prompt: pass -p \"PROMPT\" or pipe it on stdin.\n")
            return EXIT_USAGE
    signals = StopSignals()
    signals.install()
    try:
        return _build_and_run(config, args, prompt, signals, stdout, stderr, stdin if streaming else None)
    finally:
        signals.restore()


def _load_config(args: argparse.Namespace, environ: dict[str, str] | None, stderr: TextIO) -> Config | None:
    """The config (the folder trusted first with --trust), or None once the reason is on stderr."""
    try:
        config = load_config(args, environ=environ)
        if args.trust:
            remember_trust(config.workspace, environ)
    except ConfigError as e:
        stderr.write(f"ctxtui: {visible(str(e))}\n")
        return None
    except OSError as e:
        stderr.write(f"ctxtui: --trust: cannot remember the trusted folder ({one_line(str(e.filename or ''))}: "
                     f"{one_line(str(e.strerror or e))}); check that your config folder is writable.\n")
        return None
    if (ignored := config.ignored_message()):
        stderr.write(f"ctxtui: {visible(ignored)}\n")
    return config


def _build_and_run(config: Config, args: argparse.Namespace, prompt: str | None, signals: StopSignals, stdout: TextIO,
                   stderr: TextIO, prompts: TextIO | None = None) -> int:
    """Build the agent and run the prompt, the compaction, or (`prompts`: stream-json's stdin)
    every prompt of the input."""
    try:
        agent = build_agent(config, resume=args.resume, continue_=args.continue_)
    except ConfigError as e:
        stderr.write(f"ctxtui: {visible(str(e))}\n")
        return EXIT_USAGE
    except SessionWriteError as e:
        stderr.write(f"ctxtui: {visible(str(e))}\n")
        return EXIT_FAILED
    output = _Output(args.output_format, stdout, stderr)
    output.on_closed = signals.reader_gone
    _say_at_start(agent, output)
    if prompts is not None:
        all_ok = asyncio.run(run_stream(agent, prompts, output, signals))
        return _exit_code(signals, output, failed=not all_ok)
    if args.preview is not None:
        return EXIT_OK if asyncio.run(run_preview(agent, compact_focus(args), output)) else EXIT_FAILED
    result = asyncio.run(run_headless(agent, prompt, output, signals, compact=args.compact))
    output.finish(result)
    if result.pop("interrupted") or result["stop_reason"] == "cancelled":
        return signals.exit_code() or EXIT_INTERRUPTED
    return _exit_code(signals, output, failed=result["is_error"])   # EXIT_PIPE: the result could not be written


def _say_at_start(agent: Agent, output: _Output) -> None:
    """What resuming repaired, and the notices the agent was built with, before the run."""
    output.load_warnings(agent.load_warnings())
    if agent.info.offline:
        output.event(ev.Notice("No ANTHROPIC_API_KEY: running on the offline demo model."))
    if agent.engine_notice:
        output.startup_notice(agent.engine_notice)   # CTXTUI_ENGINE could not be honoured: why, once
    if agent.policy_notice:
        output.startup_notice(agent.policy_notice)   # --policy other than the default
    for notice in agent.start_notices:
        output.startup_notice(notice)          # memory files cut or refused, a project .mcp.json not read


def _exit_code(signals: StopSignals, output: _Output, failed: bool) -> int:
    """128+N after a signal, 141 when stdout's reader went away, else 1 or 0."""
    if signals.received is not None:
        return signals.exit_code() or EXIT_INTERRUPTED
    if output.closed:
        return EXIT_PIPE
    return EXIT_FAILED if failed else EXIT_OK
