"""A long Claude Code session log written to a file, for the replay scale tests and bench/replay.py.

`write_claude_code_log(path, megabytes=250)` streams a log of about that size in Claude Code 2.x's
shape (claude_code.py): a prompt per turn naming a file, 1–8 tool rounds (Read, Bash, Grep, Edit;
each response one `assistant` record per content block repeating its usage, the last copy with the
final output count), tool results with Claude Code's `toolUseResult` copy of the output, a text
answer, 1–4 minutes between prompts and a 70-minute pause every 12 prompts; when the logged context
reaches Claude Code's threshold, a `compact_boundary` then the summary record. The usage adds up
as a real log's does (every request's cache read is the previous request's prefix while warm, its
write the rest), so the trajectory reader calibrates it like a real one.

The project it works on grows with the log (a new file and a new identifier every few turns), so
the references a long log holds grow with it, as in a long real session. Deterministic for a
seed; memory stays constant (one record at a time). Text comes from slices of one pool of words,
so writing 250 MB takes seconds.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

WORDS = ("parser", "token", "window", "cache", "result", "config", "entry", "layer", "budget", "stream",
         "report", "anchor", "round", "digest", "summary", "prefix", "index", "buffer", "limit", "event",
         "def", "return", "self", "import", "value", "error", "path", "line", "class", "None", "data")
MODEL = "claude-sonnet-4-5-20250929"
SESSION = "7a1c2e3d-0000-4000-8000-5ca1e0000001"


@dataclass
class LogStats:
    """What a generated log holds."""
    path: Path
    bytes: int = 0
    lines: int = 0
    requests: int = 0
    prompts: int = 0
    compactions: int = 0


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class _Writer:
    def __init__(self, path: Path, seed: int, window: int, overhead: int, model: str) -> None:
        self.rng = random.Random(seed)
        self.f = open(path, "w", encoding="utf-8")
        self.stats = LogStats(Path(path))
        self.model = model
        self.overhead = overhead
        self.threshold = window - 13_000 - 20_000          # Claude Code's auto-compact threshold
        self.pool = " ".join(self.rng.choices(WORDS, k=400_000))
        self.files = [self._new_file(i) for i in range(40)]
        self.idents = [f"handle_{self.rng.choice(WORDS)}_{i}" for i in range(40)]
        self.context = 0                    # tokens of the messages the logged context holds
        self.prev_total: int | None = None  # the previous request's input, for its cache read
        self.prev_ts = 0.0
        self.now = 1_760_000_000.0
        self.n = 0                          # records written (uuids)
        self.common = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/home/dev/proj",
                       "sessionId": SESSION, "version": "2.1.3", "gitBranch": "main"}

    def _new_file(self, i: int) -> str:
        return f"src/pkg{i % 9}/{self.rng.choice(WORDS)}_{i}.py"

    def text(self, tokens: int, *seed_words: str) -> str:
        """About `tokens` tokens (4 characters a token): the seed words, then a slice of the pool."""
        n = max(4, tokens * 4)
        start = self.rng.randrange(0, len(self.pool) - n - 1)
        head = " ".join(seed_words)
        return (head + " " + self.pool[start:start + n])[:n] if head else self.pool[start:start + n]

    def emit(self, rec: dict) -> None:
        self.n += 1
        line = json.dumps({**self.common, "uuid": f"u{self.n:09d}", "timestamp": _iso(self.now), **rec},
                          separators=(",", ":"), ensure_ascii=False)
        self.f.write(line + "\n")
        self.stats.lines += 1
        self.stats.bytes += len(line) + 1

    def grow(self, tokens: int) -> None:
        self.context += tokens

    def user(self, content, tokens: int, **extra) -> None:
        self.emit({"type": "user", "message": {"role": "user", "content": content}, **extra})
        self.grow(tokens)

    def response(self, blocks: list[dict], out_tokens: int) -> None:
        """One model call: the usage of a request holding the context so far, one record per block."""
        total = self.overhead + self.context
        warm = self.prev_total is not None and self.now - self.prev_ts <= 300
        read = min(self.prev_total, total) if warm and self.prev_total else self.overhead
        inp = self.rng.randint(1, 9)
        write = max(0, total - read - inp)
        usage = {"input_tokens": inp, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
                 "output_tokens": out_tokens, "service_tier": "standard",
                 "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0}}
        self.stats.requests += 1
        mid, rid = f"msg_{self.stats.requests:010d}", f"req_{self.stats.requests:010d}"
        for i, b in enumerate(blocks):
            last = i == len(blocks) - 1
            u = usage if last else {**usage, "output_tokens": min(8, out_tokens)}
            self.emit({"type": "assistant", "requestId": rid,
                       "message": {"id": mid, "type": "message", "role": "assistant", "model": self.model,
                                   "content": [b], "stop_reason": "tool_use" if last else None, "usage": u}})
        self.prev_total, self.prev_ts = total, self.now
        self.grow(out_tokens)

    def compact_if_due(self) -> None:
        if self.overhead + self.context < self.threshold:
            return
        self.emit({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                   "level": "info", "compactMetadata": {"trigger": "auto", "preTokens": self.overhead + self.context}})
        self.context = 0
        summary = self.text(3_000, "This session is being continued from a previous conversation.")
        self.user(summary, 3_000, isCompactSummary=True, isVisibleInTranscriptOnly=True)
        self.prev_total = None
        self.stats.compactions += 1

    def turn(self) -> None:
        rng = self.rng
        self.stats.prompts += 1
        if self.stats.prompts % 4 == 0:                       # the project grows
            self.files.append(self._new_file(len(self.files)))
            self.idents.append(f"handle_{rng.choice(WORDS)}_{len(self.idents)}")
        self.now += 70 * 60 if self.stats.prompts % 12 == 0 else rng.uniform(60, 240)
        target = rng.choice(self.files)
        ident = rng.choice(self.idents)
        tokens = rng.randint(30, 400)
        self.user(self.text(tokens, "please look at", target, "and fix", ident), tokens)
        for _ in range(rng.randint(1, 8) - 1):
            self.compact_if_due()
            self.tool_round()
        self.compact_if_due()
        out = rng.randint(80, 900)
        self.response([{"type": "text", "text": self.text(out)}], out)

    def tool_round(self) -> None:
        rng = self.rng
        tool = rng.choice(("Read", "Read", "Bash", "Grep", "Edit"))
        target = rng.choice(self.files)
        tid = f"toolu_{self.stats.requests + 1:010d}"
        if tool == "Read":
            inp: dict = {"file_path": f"/home/dev/proj/{target}"}
        elif tool == "Bash":
            inp = {"command": f"pytest -q {target} -k {rng.choice(self.idents)}", "description": "run the tests"}
        elif tool == "Grep":
            inp = {"pattern": f"def {rng.choice(self.idents)}", "path": "src", "output_mode": "content"}
        else:
            inp = {"file_path": f"/home/dev/proj/{target}", "old_string": self.text(40), "new_string": self.text(50)}
        say = rng.randint(10, 80)
        out = say + 40 + rng.randint(0, 300)
        blocks: list[dict] = [{"type": "text", "text": self.text(say)},
                              {"type": "tool_use", "id": tid, "name": tool, "input": inp}]
        if rng.random() < 0.3:
            blocks.insert(0, {"type": "thinking", "thinking": self.text(rng.randint(40, 300)), "signature": "sig"})
        self.response(blocks, out)
        self.now += rng.uniform(2, 20)
        size = 60 if tool == "Edit" else rng.choice((200, 600, 1_500, 3_000, 6_000)) + rng.randint(0, 400)
        body = self.text(size, target, "def", rng.choice(self.idents), "class")
        copy: dict = ({"type": "text", "file": {"filePath": inp["file_path"], "content": body}} if tool == "Read"
                      else {"stdout": body, "stderr": "", "interrupted": False} if tool == "Bash"
                      else {"mode": "content", "content": body} if tool == "Grep" else {"filePath": inp["file_path"]})
        self.user([{"type": "tool_result", "tool_use_id": tid, "content": body}], size, toolUseResult=copy)
        self.now += 1


def write_claude_code_log(path: str | Path, *, megabytes: float | None = None, requests: int | None = None,
                          seed: int = 7, window: int = 200_000, overhead: int = 14_000,
                          model: str = MODEL) -> LogStats:
    """Write a log of about `megabytes` MB or of at least `requests` model calls (whichever comes
    first when both are given; ends with a whole turn). Returns what it holds."""
    if megabytes is None and requests is None:
        raise ValueError("give megabytes or requests")
    limit = int(megabytes * 1_000_000) if megabytes is not None else None
    w = _Writer(Path(path), seed, window, overhead, model)
    try:
        while (limit is None or w.stats.bytes < limit) and (requests is None or w.stats.requests < requests):
            w.turn()
    finally:
        w.f.close()
    return w.stats
