"""The closed loop against the real peer (issue 49): ctxtui and Claude Code, each run as a user runs
it — the command, stream-json in and out, one prompt at a time — against one loopback fake server
whose scripted model plays the same agent for both.

- A workspace of files of 8–30 KB; each holds one fact (`FACT: the code of file_07 is K7Q2-19`) on a
  line drawn at any depth (the first line, the middle, the last tenth), so a compaction that keeps a
  file's head and drops the rest loses it.
- A plan (tests/closed_loop_agent.plan_prompts): read a file, and later, 2–30 prompts after, "what is
  the fact of file X?"; or reads only.
- The model (`PeerModel`) answers from the request alone: the fact verbatim anywhere in the request
  is an answer from the context; otherwise it calls the client's read tool again (`Read` with
  `file_path` for Claude Code, `read_file` with `path` for ctxtui) and answers from the result, or
  says the fact is lost.
- **The summary rule, one for both clients**: a summary request (ctxtui's prompt or Claude Code's
  compact prompt, wherever it sits) is answered with a nine-section summary that lists every user
  prompt and every file path the request holds, and no file content: a fact survives a summary only
  where the client kept it outside the summary (verbatim messages, re-attached files).

The dollars are the fake server's own usage of every answered request, priced with genai-prices'
rates for the request's model. No network, no real key.
"""
from __future__ import annotations

import json
import os
import random
import selectors
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from agent_core.pricing.cost import price_buckets, usage_buckets
from tests.closed_loop_agent import (FileFact, Outcome, ScriptedModel, Step, _code, filler, plan_prompts,
                                     request_text, summary_reply)
from tests.fake_anthropic import FakeAnthropic, is_summary_request, tool_use
from tests.fake_anthropic.usage import Tokenizer, segments

MODEL = "claude-sonnet-4-6"
FAKE_KEY = "sk-ant-peer-loop-not-a-real-key-000"
CC_VERSION = "2.1.328"
CC_READ, CTXTUI_READ = "Read", "read_file"
QUIET = ("DISABLE_AUTOUPDATER", "DISABLE_TELEMETRY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
         "DISABLE_ERROR_REPORTING")     # PEER_QUIET=1: Claude Code without its background calls


# ------------------------------------------------------------------ the workspace

@dataclass(frozen=True)
class Workload:
    """One workload: how many files, how many reads and recalls, the recall distances, the seed."""
    name: str
    files: int = 100
    reads: int = 57
    questions: int = 55
    min_gap: int = 2
    max_gap: int = 30
    seed: int = 0
    min_kb: float = 8
    max_kb: float = 30


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("recall-a", seed=2),                                # seeds whose plan exists (plan_prompts)
    Workload("recall-b", reads=58, questions=54, seed=3),
    Workload("reads-only", reads=100, questions=0, seed=4),
    Workload("small", files=16, reads=14, questions=8, max_gap=8, min_kb=4, max_kb=8, seed=3),  # the test suite's
)}


def build_deep_workspace(ws: Path, w: Workload) -> list[FileFact]:
    """`w.files` files `file_NN.txt`, deterministic from the seed, each `min_kb`–`max_kb` KB of note
    lines with the fact's line at a drawn depth: a third on the first line, a third in the middle
    half, a third in the last tenth. Filler holds no fact and no code."""
    rng = random.Random(f"peer-loop-files-{w.seed}")
    ws.mkdir(parents=True, exist_ok=True)
    facts: list[FileFact] = []
    codes: set[str] = set()
    for i in range(w.files):
        code = _code(rng)
        while code in codes:
            code = _code(rng)
        codes.add(code)
        name = f"file_{i:03d}"
        target = int(rng.uniform(w.min_kb, w.max_kb) * 1024)
        lines = filler(rng, name, target)
        depth = rng.choice(("first", "middle", "end"))
        at = 0 if depth == "first" else (rng.randrange(len(lines) // 4, 3 * len(lines) // 4) if depth == "middle"
                                         else rng.randrange(len(lines) * 9 // 10, len(lines)))
        lines.insert(at, f"FACT: the code of {name} is {code}")
        text = "\n".join(lines) + "\n"
        (ws / f"{name}.txt").write_text(text, encoding="utf-8")
        facts.append(FileFact(f"{name}.txt", code, len(text.encode())))
    return facts


def plan(facts: list[FileFact], w: Workload) -> list[Step]:
    """`w.reads` of the files read in a seeded order, `w.questions` recalls interleaved."""
    return plan_prompts(facts[:w.reads], w.questions, w.seed, w.min_gap, w.max_gap)


# ------------------------------------------------------------------ the model

def last_prompt_text(body: Mapping[str, Any]) -> str:
    """The newest user text that is not a `<system-reminder>` block or a tool result."""
    for m in reversed(body.get("messages") or []):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
                 and not str(b.get("text", "")).lstrip().startswith("<system-reminder>")]
        if texts:
            return "\n".join(texts)
    return ""


def read_call(body: Mapping[str, Any], workspace: Path, path: str, offset: int | None = None) -> dict:
    """The client's own read tool: Claude Code's `Read` (absolute `file_path`) or ctxtui's `read_file`;
    `offset` reads on from that line, as the tool's note says to."""
    names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    at = {"offset": offset} if offset else {}
    if CC_READ in names:
        return tool_use(CC_READ, {"file_path": str(workspace / path), **at})
    return tool_use(CTXTUI_READ, {"path": path, **at})


class PeerModel(ScriptedModel):
    """The scripted model for both clients, with the bench's one summary rule (every user prompt
    and file path the request holds, no content). The runner sets `step` before it sends each
    prompt; answers are decided from the request body alone."""

    def __init__(self, steps: list[Step], workspace: Path) -> None:
        super().__init__(steps)
        self.workspace = workspace
        self.summary_facts_in: list[int] = []       # facts each summary request held (for the loss report)

    def read(self, body: dict, path: str, offset: int | None = None) -> dict:
        self.pages += bool(offset)
        return read_call(body, self.workspace, path, offset)

    def summary(self, body: dict) -> dict:
        seen = request_text(body)
        self.summary_facts_in.append(sum(s.file.fact in seen for s in self.steps))
        return summary_reply(sorted({s.file.path for s in self.steps if s.file.path in seen}),
                             [s.prompt for s in self.steps if s.prompt in seen])


# ------------------------------------------------------------------ the clients

@dataclass(frozen=True)
class Client:
    """A client as a user runs it: `argv` and extra environment for (window, home folder)."""
    name: str
    kind: str                                     # "claude-code" | "ctxtui"
    argv: Callable[[int], list[str]]
    env: Callable[[int, Path], dict[str, str]]


def claude_code_binary(cache: Path) -> Path:
    """The pinned Claude Code's native binary under `cache`, installed from npm when missing."""
    binary = cache / "node_modules" / "@anthropic-ai" / "claude-code-linux-x64" / "claude"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed: install Node.js and npm, or pass --no-claude-code")
    cache.mkdir(parents=True, exist_ok=True)
    print(f"installing @anthropic-ai/claude-code@{CC_VERSION} into {cache} (about 10 s) ...", flush=True)
    subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(cache),
                    f"@anthropic-ai/claude-code@{CC_VERSION}"], check=True)
    if not binary.exists():
        raise RuntimeError(f"npm installed Claude Code {CC_VERSION} but {binary} is missing "
                           "(only linux-x64 is supported by this bench)")
    return binary


def claude_code(binary: Path, *, proactive: bool = False) -> Client:
    """Claude Code 2.1.328 headless. Below 200k it takes CLAUDE_CODE_AUTO_COMPACT_WINDOW (it refuses
    less than 100k). `proactive`: CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=100 makes it compact at its threshold
    instead of waiting for the prompt-too-long error."""
    def argv(window: int) -> list[str]:
        return [str(binary), "-p", "--input-format", "stream-json", "--output-format", "stream-json",
                "--verbose", "--model", MODEL, "--allowedTools", CC_READ]

    def env(window: int, home: Path) -> dict[str, str]:
        e = {"HOME": str(home), **({k: "1" for k in QUIET} if os.environ.get("PEER_QUIET") else {})}
        if window < 200_000:
            e["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(window)
        if proactive:
            e["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] = "100"
        return e
    return Client("claude-code" + ("-proactive" if proactive else ""), "claude-code", argv, env)


def ctxtui(executable: Path, policy: str = "ctxtui", extra: tuple[str, ...] = ()) -> Client:
    """ctxtui headless with the policy, as typed."""
    def argv(window: int) -> list[str]:
        return [str(executable), "--headless", "--input-format", "stream-json", "--output-format", "stream-json",
                "--model", MODEL, "--context-window", str(window), "--policy", policy, *extra]

    def env(window: int, home: Path) -> dict[str, str]:
        return {"HOME": str(home), "CTXTUI_HOME": str(home / "ctxtui"), "XDG_STATE_HOME": str(home / "state"),
                "XDG_CONFIG_HOME": str(home / "config")}
    name = "ctxtui" if policy == "ctxtui" and not extra else f"ctxtui-{policy}" + "".join(extra)
    return Client(name, "ctxtui", argv, env)


# ------------------------------------------------------------------ a run

@dataclass
class PeerFigures:
    client: str
    workload: str
    window: int
    questions: int
    answered: int            # from the context
    rereads: int             # answered after reading the file again
    lost: int
    main_requests: int
    summary_requests: int
    compactions: int         # as the client reported them (compact_boundary / compaction events)
    prompt_too_long: int     # requests the server refused as too long for the window
    prompts: int
    prompts_kept: int        # user prompts verbatim in the last main request
    peak_tokens: int         # the largest request the server answered (input + cache read + cache write)
    dollars: float
    summary_dollars: float
    seconds: float
    layers: dict[str, int] = field(default_factory=dict)      # compactions by layer (ctxtui) or trigger (Claude Code)
    head_tokens: int = 0     # the fixed head every request carries: system prompt and tools, as the server counts
    head_dollars: float = 0.0    # what reading that head cost over the main requests
    after_compaction: list[int] = field(default_factory=list)   # the first main request after each summary
    facts_into_summaries: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)   # turns the client ended in an error


@dataclass
class PeerRun:
    figures: PeerFigures
    bodies: list[dict]
    usages: list[dict]
    outcomes: list[Outcome]
    home: Path
    workspace: Path


def session_log(run: PeerRun) -> Path | None:
    """The main session log the client wrote: Claude Code's under ~/.claude/projects, ctxtui's under
    its state folder's projects/*/sessions."""
    found = (sorted(run.home.glob(".claude/projects/*/*.jsonl"))
             or sorted(run.home.glob("ctxtui/projects/*/sessions/*.jsonl")))
    return found[-1] if found else None


def _price(usage: Mapping[str, Any], model: str) -> float:
    return price_buckets(model, usage_buckets(dict(usage))) or 0.0


def _hermetic_env(extra: Mapping[str, str], base_url: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR", "VIRTUAL_ENV")}
    return {**keep, "ANTHROPIC_API_KEY": FAKE_KEY, "ANTHROPIC_BASE_URL": base_url, **extra}


class _Lines:
    """A subprocess's stdout read line by line with a deadline."""

    def __init__(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        self.proc, self.buf = proc, b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(proc.stdout, selectors.EVENT_READ)

    def next(self, deadline: float) -> str | None:
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sel.select(left):
                raise TimeoutError("no answer in time")
            chunk = os.read(self.proc.stdout.fileno(), 65536)  # type: ignore[union-attr]
            if not chunk:
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode("utf-8", "replace")


def run_client(client: Client, root: Path, workload: Workload, window: int, *, turn_timeout: float = 120.0,
               tokenizer: Tokenizer | None = None, progress: Callable[[int, int], None] | None = None) -> PeerRun:
    """One session of `workload` under `client` at `window`, in a fresh workspace and home under `root`."""
    started = time.monotonic()
    ws, home = root / "ws", root / "home"
    home.mkdir(parents=True, exist_ok=True)
    facts = build_deep_workspace(ws, workload)
    steps = plan(facts, workload)
    model = PeerModel(steps, ws.resolve())
    compactions, errors, layers = 0, [], {}
    with FakeAnthropic(responder=model, context_window=window, tokenizer=tokenizer) as fake:
        proc = subprocess.Popen(client.argv(window), cwd=ws, env=_hermetic_env(client.env(window, home), fake.base_url),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        lines = _Lines(proc)
        try:
            assert proc.stdin is not None
            for i, s in enumerate(steps):
                model.step = i
                proc.stdin.write((json.dumps({"type": "user", "message": {"role": "user", "content": s.prompt}})
                                  + "\n").encode())
                proc.stdin.flush()
                deadline = time.monotonic() + turn_timeout
                while True:
                    line = lines.next(deadline)
                    if line is None:
                        raise RuntimeError(f"{client.name} exited during prompt {i + 1}")
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    kind, sub = event.get("type"), event.get("subtype")
                    if kind == "compaction" or (kind == "system" and sub == "compact_boundary"):
                        compactions += 1
                        layer = str(event.get("layer") or (event.get("compact_metadata") or {}).get("trigger"))
                        layers[layer] = layers.get(layer, 0) + 1
                    if kind == "result":
                        if event.get("is_error"):
                            said = event.get("result") or event.get("error") or event.get("stop_reason")
                            errors.append(f"prompt {i + 1}: {str(said)[:160]}")
                        break
                model.step = None
                if progress:
                    progress(i + 1, len(steps))
        finally:
            if proc.stdin:
                proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        records = [r for r in fake.requests if r.path == "/v1/messages"]
    answered = [r for r in records if r.status == 200 and r.usage is not None]
    main = [r for r in answered if not is_summary_request(r.body)]
    summaries = [r for r in answered if is_summary_request(r.body)]
    last = request_text(main[-1].body) if main else ""
    outcomes = [model.outcomes.get(i) or Outcome(i, s.file.path, s.gap, "lost")
                for i, s in enumerate(steps) if s.kind == "ask"]
    count = {how: sum(o.how == how for o in outcomes) for how in ("context", "reread", "lost")}

    def total(u: Mapping[str, Any]) -> int:
        return int(u.get("input_tokens", 0)) + int(u.get("cache_read_input_tokens", 0)) \
            + int(u.get("cache_creation_input_tokens", 0))
    after: list[int] = []
    for k, r in enumerate(answered):
        if is_summary_request(r.body):
            nxt = next((x for x in answered[k + 1:] if not is_summary_request(x.body)), None)
            if nxt is not None:
                after.append(total(nxt.usage or {}))
    head = sum(seg.tokens for seg in segments(main[0].body, tokenizer)
               if seg.key.startswith(("tool:", "system:"))) if main else 0
    figures = PeerFigures(
        client=client.name, workload=workload.name, window=window, questions=len(outcomes),
        answered=count["context"], rereads=count["reread"], lost=count["lost"], main_requests=len(main),
        summary_requests=len(summaries), compactions=compactions,
        prompt_too_long=sum(r.served == "prompt_too_long" for r in records), prompts=len(steps),
        prompts_kept=sum(s.prompt in last for s in steps),
        peak_tokens=max((total(r.usage or {}) for r in main), default=0),
        dollars=sum(_price(r.usage or {}, r.body.get("model", MODEL)) for r in answered),
        summary_dollars=sum(_price(r.usage or {}, r.body.get("model", MODEL)) for r in summaries),
        seconds=time.monotonic() - started, layers=layers, head_tokens=head,
        after_compaction=after,
        head_dollars=sum(_price({"cache_read_input_tokens": head}, r.body.get("model", MODEL)) for r in main),
        facts_into_summaries=list(model.summary_facts_in), errors=errors)
    return PeerRun(figures, [r.body for r in records], [r.usage or {} for r in answered], outcomes, home, ws)
