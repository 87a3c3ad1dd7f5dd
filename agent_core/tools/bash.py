"""bash: run a shell command in the workspace, in its own session and process group, so that
everything it started ends with it: a timeout or a cancellation kills the group, and when the
command itself ends, what it left running in the background is hung up (SIGHUP, as when a terminal
closes; `nohup` and `setsid` keep a process on purpose). Groups still running when ctxtui exits
are killed. (How and when: agent_core/tools/process_groups.py.) Output is stream-capped: however
much a command prints, only the head and tail (ctx.output_cap chars) are ever held in memory,
and the spill file that keeps the rest is capped too (MAX_SPILL_BYTES a call,
MAX_SPILL_FOLDER_BYTES for the folder, oldest files go first).
With the OS sandbox on (ctx.os_sandbox, agent_core/os_sandbox) the same shell runs inside
bubblewrap; its PID namespace ends with the command, so there nothing outlives it, `nohup` included."""
from __future__ import annotations

import asyncio
import codecs
import os
import subprocess
import tempfile
from pathlib import Path
from typing import BinaryIO

from compaction.scrub import registered, scrub

from agent_core.tools import process_groups
from agent_core.tools.base import Tool, ToolContext, ToolError, ToolOutput

DRAIN_GRACE_S = 0.25      # after bash exits, how long to wait for a background job to release the pipe
KILL_WAIT_S = 5.0         # after SIGKILL, how long to wait for the exit to be reported
MAX_SPILL_BYTES = 32 << 20          # one call's saved output: past this the rest is counted, not kept
MAX_SPILL_FOLDER_BYTES = 256 << 20  # every spill file of a session folder: the oldest are deleted first


class CappedText:
    """Decodes a byte stream incrementally and keeps only its first and last chars within `cap`;
    counts what it drops so the note can say how much."""

    def __init__(self, cap: int) -> None:
        self.head_cap = max(cap // 2, 0)
        self.tail_cap = max(cap - self.head_cap, 0)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head: list[str] = []
        self._head_len = 0
        self._tail = ""
        self.total_chars = 0

    def feed(self, data: bytes) -> None:
        self._add(self._decoder.decode(data))

    def _add(self, text: str) -> None:
        if not text:
            return
        self.total_chars += len(text)
        if self._head_len < self.head_cap:
            take = text[:self.head_cap - self._head_len]
            self._head.append(take)
            self._head_len += len(take)
            text = text[len(take):]
        if text:
            self._tail += text
            if len(self._tail) > 2 * self.tail_cap:
                self._tail = self._tail[len(self._tail) - self.tail_cap:] if self.tail_cap else ""

    def finish(self) -> tuple[str, int]:
        """(text with an omission note if anything was dropped, number of chars dropped)."""
        self._add(self._decoder.decode(b"", final=True))
        head = "".join(self._head)
        tail = self._tail[len(self._tail) - self.tail_cap:] if self.tail_cap else ""
        omitted = self.total_chars - len(head) - len(tail)
        if omitted <= 0:
            return head + self._tail, 0
        return f"{head}\n[… {omitted} chars omitted …]\n{tail}", omitted


class _Collector(asyncio.SubprocessProtocol):
    """Feeds output straight into the cap (no StreamReader buffer) and reports exit and pipe close
    separately: a background job may keep the pipe open long after bash itself has exited."""

    def __init__(self, cap: int, loop: asyncio.AbstractEventLoop, spill_dir: Path | None = None) -> None:
        self.out = CappedText(cap)
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.spill = _Spill(spill_dir) if spill_dir is not None else None

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.out.feed(data)
        if self.spill is not None:
            self.spill.write(data)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class _Spill:
    """Every byte of the output, on disk, so a capped result still loses nothing. Kept only
    when the cap dropped something; otherwise deleted. Written scrubbed: the last bytes of each
    chunk are held back until the next one, so a secret split across two chunks is still whole
    when it is scrubbed."""

    def __init__(self, folder: Path, cap: int | None = None) -> None:
        self.folder = Path(folder)
        self._f: BinaryIO | None = None
        self.path: Path | None = None
        self._held = b""
        self.failed = False
        self.cap = MAX_SPILL_BYTES if cap is None else cap
        self.written = 0
        self.dropped = 0          # bytes past the cap, counted only

    def write(self, data: bytes) -> None:
        if self.failed:
            return
        room = self.cap - self.written
        if room <= 0:
            self.dropped += len(data)
            return
        if len(data) > room:
            self.dropped += len(data) - room
            data = data[:room]
        self.written += len(data)
        try:
            if self._f is None:
                self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
                fd, name = tempfile.mkstemp(dir=self.folder, prefix="bash-", suffix=".txt")
                os.fchmod(fd, 0o600)
                self._f = os.fdopen(fd, "wb")
                self.path = Path(name)
            self._f.write(self._scrubbed(data))
        except OSError:
            self.failed = True

    def _scrubbed(self, data: bytes) -> bytes:
        """`data` (after what was held back) with secrets replaced, less a tail one byte shorter
        than the longest secret, held for the next chunk."""
        secrets_now = registered()
        if not secrets_now and not self._held:
            return data
        keep = max((len(s.encode("utf-8", "surrogateescape")) for s in secrets_now), default=1) - 1
        text = (self._held + data).decode("utf-8", "surrogateescape")
        out = scrub(text).encode("utf-8", "surrogateescape")
        cut = max(len(out) - keep, 0)
        self._held = out[cut:]
        return out[:cut]

    def finish(self, keep: bool) -> Path | None:
        if self._f is None or self.path is None:
            return None
        try:
            if self._held and not self.failed:
                self._f.write(self._held)            # already scrubbed; held only for a split secret
        except OSError:
            self.failed = True
        self._f.close()
        if keep and not self.failed:
            _prune_folder(self.folder, keep=self.path)
            return self.path
        self.path.unlink(missing_ok=True)
        return None


def _prune_folder(folder: Path, keep: Path, budget: int | None = None) -> None:
    """Delete the oldest spill files until the folder's spill files fit `budget` (never `keep`)."""
    budget = MAX_SPILL_FOLDER_BYTES if budget is None else budget
    try:
        files = []
        for p in folder.glob("bash-*.txt"):
            st = p.lstat()
            files.append((st.st_mtime_ns, st.st_size, p))
    except OSError:
        return
    total = sum(size for _, size, _ in files)
    for _, size, p in sorted(files):
        if total <= budget:
            break
        if p == keep:
            continue
        try:
            p.unlink()
            total -= size
        except OSError:
            pass


async def _end_spawned(spawn: asyncio.Future[tuple[asyncio.SubprocessTransport, _Collector]]) -> None:
    """A cancel that lands while the shell is still being started (its commands may already run):
    let the start finish, even through more cancels, then kill the whole group. asyncio's own
    clean-up of a cancelled start kills bash alone, and the rest of the group would run on."""
    while not spawn.done():
        try:
            await asyncio.shield(spawn)
        except asyncio.CancelledError:
            continue
        except Exception:
            break
    if spawn.cancelled() or spawn.exception() is not None:
        return
    transport, _ = spawn.result()
    process_groups.kill(transport.get_pid())    # start_new_session: the group id is bash's pid
    transport.close()


def _fmt_s(seconds: float) -> str:
    return f"{seconds:g} s"


class BashTool(Tool):
    name = "bash"
    own_deadline = True
    description = (
        "Run a shell command with /bin/bash -c in the workspace folder and return its output "
        "(stdout and stderr interleaved) followed by its exit code. Each call starts a fresh shell: "
        "`cd` and variables do not carry over, so chain steps with && . No input can be typed: "
        "avoid interactive commands and pass flags like --yes. Long output keeps only its start and "
        "end; filter it (grep, head, tail) when you need a specific part. Default timeout 120 s; "
        "pass `timeout` (seconds) for longer jobs. Prefer the read_file, grep and glob tools for "
        "reading and searching files, and edit_file/write_file for changing them."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line to run."},
            "timeout": {"type": "number",
                        "description": "Seconds before the command and everything it started are killed "
                                       "(default 120, max 600)."},
        },
        "required": ["command"],
        "additionalProperties": False,
    }

    async def run(self, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002
        command = input["command"]
        if not command.strip():
            raise ToolError("command is empty; give the shell command to run")
        timeout, notes = self._timeout(input.get("timeout"), ctx)
        loop = asyncio.get_running_loop()
        argv, env = process_groups.bash_argv(command), ctx.bash_env()
        sandbox = ctx.os_sandbox
        confined = sandbox is not None and sandbox.confines
        if sandbox is not None and confined:
            argv, env = sandbox.wrap(argv, env)
        spawn = asyncio.ensure_future(loop.subprocess_exec(
            lambda: _Collector(ctx.output_cap, loop, ctx.spill_dir), *argv,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            cwd=str(ctx.workspace), env=env, start_new_session=True))
        try:
            transport, proto = await asyncio.shield(spawn)
        except OSError as e:
            raise ToolError(f"could not start {argv[0]}: {e}") from e
        except asyncio.CancelledError:
            await _end_spawned(spawn)
            raise
        pid = transport.get_pid()
        process_groups.started(pid)
        timed_out = held_open = False
        try:
            try:
                await asyncio.wait_for(asyncio.shield(proto.exited), timeout)
            except asyncio.TimeoutError:
                timed_out = True
                process_groups.kill(pid)
                await asyncio.wait_for(asyncio.shield(proto.exited), KILL_WAIT_S)
            try:
                await asyncio.wait_for(asyncio.shield(proto.closed), DRAIN_GRACE_S)
            except asyncio.TimeoutError:
                held_open = True
        except asyncio.CancelledError:
            process_groups.kill(pid)
            if proto.spill is not None:
                proto.spill.finish(keep=False)
            raise
        finally:
            transport.close()
        process_groups.ended(pid)
        code = transport.get_returncode()
        text, omitted = proto.out.finish()
        spill = proto.spill
        spilled = spill.finish(keep=omitted > 0) if spill is not None else None
        parts = [text.rstrip("\n") if text.strip() else "(no output)"]
        if spilled is not None:
            parts.append(f"[the full output ({proto.out.total_chars:,} chars) is saved in {ctx.rel(spilled)}; "
                         "search it with grep or read parts of it with read_file]")
        if spilled is not None and spill is not None and spill.dropped:
            parts.append(f"[only the first {spill.cap:,} bytes were saved: {spill.dropped:,} more bytes "
                         "were printed and not kept]")
        if held_open:
            parts.append("[a background process still held the output when the command ended; it was hung up "
                         "(SIGHUP) with the rest of the command's processes. To keep a server running, start it "
                         "with nohup or setsid and redirect its output to a file.]")
        if timed_out:
            parts.append(f"[timed out after {_fmt_s(timeout)}: the command and every process it started "
                         f"were killed. Pass a larger `timeout` (max {_fmt_s(ctx.bash_max_timeout)}) or run "
                         f"long jobs in the background with output to a file.]")
        parts.extend(notes)
        if sandbox is not None and confined and code != 0:
            parts.append(sandbox.failure_hint())
        elif sandbox is not None and not confined and sandbox.settings.enabled:
            parts.append(f"[ran outside the sandbox, with the user's approval: {sandbox.availability().notice()}]")
        parts.append(f"exit code {code}")
        meta = {"exit_code": code, "timed_out": timed_out, "total_chars": proto.out.total_chars,
                "omitted_chars": omitted, "command": command, "full_output": str(spilled) if spilled else None,
                "sandboxed": confined}
        return ToolOutput("\n".join(parts), is_error=timed_out or code != 0, meta=meta)

    @staticmethod
    def _timeout(value: float | None, ctx: ToolContext) -> tuple[float, list[str]]:
        if value is None:
            return ctx.bash_timeout, []
        if value <= 0:
            raise ToolError(f"timeout must be a positive number of seconds, got {value}")
        if value > ctx.bash_max_timeout:
            return ctx.bash_max_timeout, [f"[timeout lowered to the maximum, {_fmt_s(ctx.bash_max_timeout)}]"]
        return float(value), []
