"""Helpers for the TUI tests: a small scripted agent that follows the Agent API, and fixed events
for snapshot tests (fixed numbers, no clock)."""
from __future__ import annotations

import asyncio
from typing import AsyncIterator

from agent_core import events as ev
from agent_core.loop.compaction_preview import CompactionPreview, PreviewError
from agent_core.waiting import Pause, PauseError
from agent_core.providers.model import ModelInfo
from agent_core.sessions.session_age import session_started
from compaction.accounting.budget import ContextBudget
from compaction.entry import Entry

SESSION_ID = "20260101T000000-abcdef"
FIXED_TIME = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC


def context_event(tokens: int, window: int = 200_000, state: str | None = None) -> ev.ContextUpdate:
    """A ContextUpdate with CC-like thresholds for a 200k window (compaction/accounting/budget.py)."""
    threshold, warning, error, blocking = 167_000, 147_000, 157_000, 177_000
    if state is None:
        state = ("blocking" if tokens >= blocking else "autocompact" if tokens >= threshold else
                 "error" if tokens >= error else "warning" if tokens >= warning else "ok")
    system, tools = 3_100, 11_900
    rest = max(0, tokens - system - tools)
    cats = {"system": system, "tools": tools, "user_text": rest // 10, "assistant_text": rest // 5,
            "tool_calls": rest // 10, "tool_results": rest // 2,
            "summaries": rest - rest // 10 * 2 - rest // 5 - rest // 2}
    buffer = window - threshold
    cats["free"] = max(0, window - tokens - buffer)
    cats["autocompact_buffer"] = buffer
    cached = tokens - 2_400              # the last request's prefix; its answer and results are new
    nxt = {"tokens": tokens, "cached_tokens": cached, "uncached_tokens": 2_400,
           "usd_if_warm": round(cached * 0.3e-6 + 2_400 * 3.75e-6, 6), "usd_if_cold": round(tokens * 3.75e-6, 6),
           "cache_expires_in_s": 272.0}
    return ev.ContextUpdate(tokens=tokens, window=window, threshold=threshold, state=state,
                            percent_left=round(max(0.0, (threshold - tokens) / threshold * 100), 1),
                            categories=cats, warning=warning, error=error, blocking=blocking, next_request=nxt)


def cost_event() -> ev.CostUpdate:
    sonnet = {"input": 12_345, "output": 6_789, "cache_write_5m": 45_000, "cache_write_1h": 0,
              "cache_read": 310_000, "cost_usd": 0.4512, "requests": 9,
              "usd_by_bucket": {"input": 0.0417, "output": 0.1147, "cache_write_5m": 0.1901, "cache_write_1h": 0.0,
                                "cache_read": 0.1047}}
    haiku = {"input": 2_000, "output": 1_500, "cache_write_5m": 0, "cache_write_1h": 0,
             "cache_read": 0, "cost_usd": 0.0095, "requests": 1,
             "usd_by_bucket": {"input": 0.002, "output": 0.0075, "cache_write_5m": 0.0, "cache_write_1h": 0.0,
                               "cache_read": 0.0}}
    return ev.CostUpdate(total_usd=0.4607, by_model={"claude-sonnet-4-5": sonnet, "claude-haiku-4-5": haiku},
                         by_purpose={"main": {**sonnet}, "compaction": {**haiku}},
                         cache_hit_rate=round(310_000 / (12_345 + 45_000 + 310_000 + 2_000), 4), saved_usd=0.8091)


class FakeAgent:
    """Scripted agent (an `app.tui.agent_port.AgentHandle`): each run streams `chunks` text pieces,
    keeps a token count that grows by `growth` per turn and compacts (layer autocompact) when it
    passes the threshold. It keeps no times, no prices and no log."""

    def __init__(self, *, window: int = 8_000, chunks: int = 20, growth: int = 2_500,
                 chunk_delay: float = 0.0, gate: asyncio.Event | None = None) -> None:
        self.info = ModelInfo(provider="demo", model="demo", context_window=window, max_output_tokens=1_000,
                              offline=True, notes=["demo — offline"])
        self.session_id = SESSION_ID
        self.entries: list[Entry] = []
        self.compactions: list[ev.Compaction] = []
        self.context_history: list[tuple[int, int, bool]] = []
        self.turns = 0
        self.tokens = 1_000
        self.window = window
        self.chunks = chunks
        self.growth = growth
        self.chunk_delay = chunk_delay
        self.gate = gate
        self.cost_usd = 0.0
        self.emitted: list[ev.Event] = []
        self.closed = False
        self.on_context = None
        self.threshold_pct: float | None = None
        self.kept: list[float | None] = []
        self._task: asyncio.Task | None = None
        self._cancelled = False

    mcp_tokens: dict[str, int] = {}
    memory = None       # no memory files: /context lists none

    async def preview_compact(self, focus: str | None = None) -> CompactionPreview:
        raise PreviewError("the scripted agent has no compaction to preview")

    def rewind_points(self) -> list:
        return []

    def rewind(self, index: int) -> str:
        raise ValueError("the scripted agent keeps no prompts to rewind to")

    def file_plan(self, index: int) -> list | None:
        return None

    def restore_files(self, plan: list) -> list[str]:
        return []

    def changed_files(self):
        return None

    def session_diff(self) -> str:
        return ""

    async def start_mcp(self) -> list[str]:
        return []

    def mcp_status(self) -> list:
        return []

    sandbox = None      # no OS sandbox: /sandbox says so

    # -- state -----------------------------------------------------------------------------------
    def _threshold(self) -> int:
        return int(self.window * 0.835) if self.threshold_pct is None else self.budget.autocompact_threshold

    @property
    def budget(self) -> ContextBudget:
        return ContextBudget(self.window, 1_000, autocompact_pct=self.threshold_pct)

    def set_threshold(self, pct: float | None) -> ContextBudget:
        ContextBudget(self.window, 1_000, autocompact_pct=pct)      # raises outside the bounds, as the agent's
        self.threshold_pct = pct
        return self.budget

    def keep_threshold(self, pct: float | None) -> str:
        self.kept.append(pct)
        return "kept for demo in the test's config file"

    def context_event(self) -> ev.ContextUpdate:
        t, w = self._threshold(), self.window
        warning, error, blocking = t - w // 10, t - w // 20, int(w * 0.885)
        state = ("blocking" if self.tokens >= blocking else "autocompact" if self.tokens >= t else
                 "error" if self.tokens >= error else "warning" if self.tokens >= warning else "ok")
        cats = {"system": 500, "tools": 400, "user_text": self.tokens // 4, "assistant_text": self.tokens // 4,
                "tool_results": max(0, self.tokens - 900 - self.tokens // 2),
                "free": max(0, t - self.tokens), "autocompact_buffer": w - t}
        return ev.ContextUpdate(tokens=self.tokens, window=w, threshold=t, state=state,
                                percent_left=round(max(0.0, (t - self.tokens) / t * 100), 1), categories=cats,
                                warning=warning, error=error, blocking=blocking)

    def load_warnings(self) -> list[str]:
        return []

    def active_seconds(self) -> float | None:
        return None

    def api_seconds(self) -> float | None:
        return None

    def started_at(self) -> float | None:
        return session_started(self.session_id)    # the stamp its id is made of

    def has_log(self) -> bool:
        return False

    def price(self, model: str, usage: dict) -> float | None:
        return None

    def view(self) -> list[Entry]:
        return []

    def cost_event(self) -> ev.CostUpdate:
        if not self.turns:
            return ev.CostUpdate(total_usd=0.0, by_model={})
        n = self.turns
        row = {"input": 100 * n, "output": 50 * n, "cache_write_5m": 400 * n, "cache_write_1h": 0,
               "cache_read": 900 * n, "cost_usd": self.cost_usd}
        return ev.CostUpdate(total_usd=self.cost_usd, by_model={"demo": row}, by_purpose={"main": dict(row)})

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def cache_ttl(self) -> str:
        return "5m"

    async def shell(self, command: str) -> AsyncIterator[ev.Event]:
        """`!command`: a scripted output, added as the user's message (no process is run)."""
        self._task = asyncio.current_task()
        output = f"ran {command}\nexit code 0"
        self.entries.append(Entry({"role": "user", "content": [{"type": "text", "text": output}]}))
        yield await self._emit(ev.ShellRan(command, output, 0))

    # -- API -------------------------------------------------------------------------------------
    async def _emit(self, e: ev.Event) -> ev.Event:
        self.emitted.append(e)
        return e

    async def run(self, prompt: str) -> AsyncIterator[ev.Event]:
        self._task = asyncio.current_task()
        self._cancelled = False
        self.turns += 1
        self.entries.append(Entry({"role": "user", "content": [{"type": "text", "text": prompt}]}))
        yield await self._emit(ev.TurnStarted(turn=self.turns, prompt=prompt))
        try:
            if "write" in prompt:
                yield await self._emit(ev.ToolCall(id=f"t{self.turns}", name="write_file",
                                                   input={"path": "notes.txt", "content": "hello\n"}))
                req = ev.PermissionRequest(id=f"t{self.turns}", name="write_file",
                                           input={"path": "notes.txt", "content": "hello\n"})
                yield await self._emit(req)
                answer = await req.reply     # the front-end answers on the request
                req.decision = answer
                ok = answer in ("allow", "always")
                text = "wrote notes.txt" if ok else "The user denied permission to use write_file."
                yield await self._emit(ev.ToolResult(id=f"t{self.turns}", name="write_file", preview=text,
                                                     size=len(text), is_error=not ok))
            for i in range(self.chunks):
                if self._cancelled:
                    raise asyncio.CancelledError
                if i == 1 and self.gate is not None:
                    await self.gate.wait()
                if self.chunk_delay:
                    await asyncio.sleep(self.chunk_delay)
                yield await self._emit(ev.TextDelta(text=f"word{i} " if i % 7 else f"\n\nPara {i}: "))
            self.tokens += self.growth
            self.cost_usd += 0.01
            yield await self._emit(ev.AssistantDone(message_id=f"m{self.turns}", model="demo",
                                                    usage={"input_tokens": 100, "output_tokens": 50},
                                                    stop_reason="end_turn"))
            yield await self._emit(self.cost_event())
            compacted = False
            if self.tokens >= self._threshold():
                before = self.tokens
                self.tokens = 1_500
                c = ev.Compaction(layer="autocompact", trigger="auto", tokens_before=before,
                                  tokens_after=self.tokens, duration_s=0.25,
                                  transcript_path=f"/tmp/t/{self.turns}-auto.jsonl")
                self.compactions.append(c)
                compacted = True
                yield await self._emit(c)
            c = self.context_event()
            self.context_history.append((self.turns, c.tokens, compacted))
            yield await self._emit(c)
            yield await self._emit(ev.TurnFinished(stop_reason="end_turn", turns=self.turns))
        except asyncio.CancelledError:
            yield await self._emit(ev.TurnFinished(stop_reason="cancelled", turns=self.turns))

    async def compact(self, focus: str | None = None) -> AsyncIterator[ev.Event]:
        before = self.tokens
        self.tokens = max(500, self.tokens // 3)
        c = ev.Compaction(layer="autocompact", trigger="manual", tokens_before=before, tokens_after=self.tokens,
                          duration_s=0.1, transcript_path="/tmp/t/manual.jsonl",
                          action=f"focus: {focus}" if focus else "")
        self.compactions.append(c)
        yield await self._emit(c)
        ctx = self.context_event()
        self.context_history.append((self.turns, ctx.tokens, True))
        yield await self._emit(ctx)
        yield await self._emit(ev.TurnFinished(stop_reason="compacted", turns=self.turns))

    def let_time_pass(self, text: str = "") -> Pause:
        raise PauseError("/wait moves only the demo model's clock")

    def cancel(self) -> None:
        self._cancelled = True
        if self.gate is not None:
            self.gate.set()

    def clear(self) -> None:
        self.entries = []
        self.context_history.clear()
        self.tokens = 1_000

    async def aclose(self) -> None:
        self.closed = True


def scripted_turn() -> list[ev.Event]:
    """A fixed turn with every kind of block the conversation shows."""
    text = ("I looked at the project layout.\n\n## Findings\n\n- `compaction/` holds the engine\n"
            "- `app/` holds the TUI\n\n```python\ndef hello():\n    return 'world'\n```\n")
    out: list[ev.Event] = [ev.TurnStarted(turn=1, prompt="Explore the project and summarise it")]
    out += [ev.ThinkingDelta(text="The user wants an overview; list files first.")]
    out += [ev.ToolCall(id="t1", name="glob", input={"pattern": "**/*.py"}),
            ev.ToolResult(id="t1", name="glob", preview="app/tui.py\ncompaction/entry.py", size=2_048),
            ev.ToolCall(id="t2", name="bash", input={"command": "pytest -q"}),
            ev.ToolResult(id="t2", name="bash", preview="exit code 1: 2 failed", size=512, is_error=True)]
    out += [ev.TextDelta(text=text[i:i + 17]) for i in range(0, len(text), 17)]
    out += [ev.AssistantDone(message_id="m1", model="claude-sonnet-4-5", usage={}, stop_reason="end_turn"),
            ev.Compaction(layer="microcompact", trigger="auto", tokens_before=152_300, tokens_after=131_900,
                          duration_s=0.004, transcript_path=None, action="cleared 6 old tool results"),
            ev.Compaction(layer="autocompact", trigger="auto", tokens_before=168_200, tokens_after=24_700,
                          duration_s=6.2, transcript_path="~/.ctxtui/sessions/20260101T000000-abcdef/"
                                                          "transcripts/20260101T001500-auto.jsonl"),
            ev.BreakerTripped(breaker="thrash", reason="context refilled within 3 turns, 3 times"),
            ev.Error(kind="rate_limit", message="429 from the API after 2 retries.", retryable=True),
            ev.TurnFinished(stop_reason="end_turn", turns=1)]
    return out


HISTORY = tuple((t, n, c) for t, n, c in [(1, 20_000, False), (2, 46_000, False), (3, 81_000, False),
                                          (4, 118_000, False), (5, 152_300, True), (6, 131_900, False),
                                          (7, 168_200, True), (8, 24_700, False), (9, 61_000, False),
                                          (10, 97_000, False), (11, 140_000, False)])
