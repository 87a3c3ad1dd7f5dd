"""`ctxtui` (and its variants): the real compaction engine replayed over a recorded trajectory.

Each recorded message becomes an `Entry` holding its API content, so every layer reads what the
model saw. Claude Code's tool names and input keys are mapped to ctxtui's (Read → read_file,
file_path → path, …) so the layers treat those calls as they treat their own.

Token sizes — the calibration: an entry's `tokens` is a per-entry estimate the engine caches on
first use; replay fixes it to the log's calibrated `Message.tokens` when the entry is made, and
gives each recorded answer the usage a live session would have got for it: the count of the request
the engine sent before it as input, its calibrated size as output. So the engine's count is the
head plus the calibrated sizes (what the policy would send), and the layers see what they see live:
the prefix the last call cached, when it answered (a cold cache after a pause), the growth per call.
Any entry a layer rewrites (a cleared result, a digest, a summary) is a new entry and is estimated
from its new content, as in a live session.

The summarizing stages are the loop's (`compaction.default_stages`): session memory runs as is (it
needs no model); LLM compaction runs with a summarizer that calls no model but returns text of the
sized length (summary_size.py) holding what Claude Code's summary prompt asks it to keep and replay
can know — the user's messages and the paths of the files touched — and its call is priced as a
request reading the main prefix.
Replay writes no transcript, so snip — which only acts when it can archive first — never acts.
A reactive preset (cc-reactive: no summary at the threshold) sends every request; one over the
window is refused, as the API refuses it, and the loop's reactive compaction runs before it is
sent again (`Step.refused`; the refused attempt is not billed).

The pipeline is a coroutine; every step runs it on one event loop the policy keeps for its whole
run (`run_until_complete`, debug off). An `asyncio.Runner` per step is what made replay quadratic:
on Python 3.11 `Runner.run` formats the repr of the finished task — the whole `PipelineResult`,
every entry of the history — when it checks its SIGINT handler, so each step cost the size of
the history.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

from compaction import (Entry, Pipeline, PipelineConfig, PipelineResult, SummarizeConfig, default_stages)
from compaction.layer_context import LayerContext
from compaction.sized_summary import SizedSummarizer
from compaction.report import LayerResult

from agent_core.logs.trajectory import Message, Request
from agent_core.replay.logged_files import LoggedFiles
from agent_core.replay.policies import new_messages
from agent_core.replay.simulate import Step, SummaryCall

CC_TOOL_NAMES = {"Read": "read_file", "Bash": "bash", "Grep": "grep", "Glob": "glob", "Write": "write_file",
                 "Edit": "edit_file", "MultiEdit": "edit_file", "NotebookEdit": "edit_file"}
CC_INPUT_KEYS = {"file_path": "path", "notebook_path": "path"}


def ctxtui_block(block: dict) -> dict:
    """A tool_use block with Claude Code's names mapped to ctxtui's; anything else as it is."""
    if block.get("type") != "tool_use" or block.get("name") not in CC_TOOL_NAMES:
        return block
    inp = block.get("input")
    inp = inp if isinstance(inp, dict) else {}
    mapped = {CC_INPUT_KEYS.get(k, k): v for k, v in inp.items()}
    return {**block, "name": CC_TOOL_NAMES[block["name"]], "input": mapped}


def make_entry(m: Message, timestamp: float, response_id: str | None, usage: dict | None = None) -> Entry:
    """An entry for a recorded message whose `tokens` is the message's calibrated size."""
    blocks = [ctxtui_block(b) for b in m.blocks] if m.blocks else [{"type": "text", "text": m.text or "(empty)"}]
    e = Entry({"role": m.role, "content": blocks}, timestamp=m.timestamp or timestamp,
              response_id=response_id if m.role == "assistant" else None, usage=usage)
    e.__dict__["tokens"] = max(0, int(m.tokens))    # the cached estimate, fixed to the calibrated size
    return e


def entry_text(e: Entry) -> str:
    """What references are searched in: text, tool inputs and results."""
    parts: list[str] = []
    for b in e.content:
        t = b.get("type")
        if t == "text":
            parts.append(str(b.get("text", "")))
        elif t == "tool_use":
            parts.append(json.dumps(b.get("input", {}), ensure_ascii=False, default=str))
        elif t == "tool_result":
            c = b.get("content", "")
            parts.append(c if isinstance(c, str) else " ".join(str(x.get("text", "")) for x in c
                                                               if isinstance(x, dict)))
    return "\n".join(parts)


class Recording:
    """A stage wrapper that keeps the entries the stage was last handed (what a summary call reads)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.seen: list[Entry] = []
        observe = getattr(inner, "observe", None)
        if observe is not None:
            self.observe = observe

    async def __call__(self, entries: list[Entry], ctx: LayerContext) -> LayerResult | None:
        self.seen = entries
        return await self.inner(entries, ctx)


class RecordingSummarizer(SizedSummarizer):
    """The sized summarizer, keeping each call's request messages (what the summary call sent)."""

    def __init__(self, tokens: int) -> None:
        super().__init__(tokens)
        self.requests: list[list[dict[str, Any]]] = []

    async def summarize(self, messages: list[dict[str, Any]], **kw: Any) -> Any:
        self.requests.append(list(messages))
        return await super().summarize(messages, **kw)


class EnginePolicy:
    def __init__(self, config: PipelineConfig, *, summary_tokens: int, name: str = "ctxtui",
                 summarize: SummarizeConfig | None = None) -> None:
        self.name = name
        self.ttl = config.cache_ttl
        self.summarizer = RecordingSummarizer(summary_tokens)
        self.summary_tokens = summary_tokens
        self.files = LoggedFiles()
        stages = default_stages(self.summarizer, summarize or SummarizeConfig(require_transcript=False),
                                read_file=self.files.read)
        self.stages = [Recording(s) if s.name == "autocompact" else s for s in stages]
        self.pipeline = Pipeline(config, session_dir=None, stages=self.stages)
        self.history: list[Entry] = []
        self.view: list[Entry] = []
        self._origin: dict[str, tuple[dict, Message]] = {}     # uuid -> (content as made, its message)
        self._made: dict[int, tuple[dict, Message]] = {}       # id(rewritten content) -> its message
        self._loop: asyncio.AbstractEventLoop | None = None      # one loop for every step of the run
        self._sent: int | None = None                           # the count of the last request sent
        self._reread: list[Message] = []                        # re-reads to add before the next request's own

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    def _run(self, request: Request) -> PipelineResult:
        """The pipeline for one request, on the policy's loop (made on first use)."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._loop.set_debug(False)         # debug mode formats slow tasks, results included
        return self._loop.run_until_complete(self.pipeline.run(self.history, now=request.timestamp))

    def message_of(self, e: Entry) -> Message:
        """The recorded message an entry still is, or a message describing its rewritten content."""
        orig = self._origin.get(e.uuid)
        if orig is not None and orig[0] is e.message:
            return orig[1]
        made = self._made.get(id(e.message))
        if made is not None and made[0] is e.message:
            return made[1]
        raw = json.dumps(e.message, sort_keys=True, ensure_ascii=False, default=str)
        key = "engine\x00" + hashlib.blake2b(raw.encode(), digest_size=12).hexdigest()
        kind = e.kind if e.kind in ("summary", "attachment") else "other"
        m = Message(e.role, kind, e.tokens, key, entry_text(e), timestamp=e.timestamp)
        self._made[id(e.message)] = (e.message, m)
        return m

    def reread(self, messages: list[Message]) -> None:
        """A re-read's call and result (simulate.py): history before the next request's messages,
        so before the answer they came ahead of."""
        self._reread += messages

    def step(self, request: Request) -> Step:
        added = [*self._reread, *new_messages(request)]
        self._reread = []
        self.files.add(added)
        # the last answer among them anchors the count: the request before it, plus every message
        # added up to it (an answer may be logged as several messages, results in between)
        last = max((i for i, m in enumerate(added) if m.role == "assistant"), default=None)
        for i, m in enumerate(added):
            usage = None
            if i == last and self._sent is not None:
                usage = {"input_tokens": self._sent, "output_tokens": sum(max(0, x.tokens) for x in added[:i + 1])}
            e = make_entry(m, request.timestamp, m.key, usage)
            self._origin[e.uuid] = (e.message, m)
            self.history.append(e)
        calls_before = len(self.summarizer.calls)
        res = self._run(request)
        reports = list(res.reports)
        refused = not self.pipeline.config.proactive and res.tokens > self.pipeline.budget.context_window
        if refused:
            res = self._reactive(res, request, reports)
        self.history = res.entries
        self.view = res.view or res.entries
        self._sent = res.tokens
        step = Step([self.message_of(e) for e in self.view if e.sent], refused=refused)
        seen = next((s.seen for s in self.stages if isinstance(s, Recording)), [])
        for prompt, sent in zip(self.summarizer.calls[calls_before:], self.summarizer.requests[calls_before:]):
            context, extra = self._summarised(seen, sent)
            step.calls.append(SummaryCall(context, prompt + extra, self.summary_tokens, "autocompact"))
        for r in reports:
            if not r.details.get("failed") and r.tokens_after < r.tokens_before:
                step.compactions.append(r.layer)
        self._forget_dead()
        return step

    def _summarised(self, seen: list[Entry], sent: list[dict]) -> tuple[list[Message], int]:
        """What a summary call read: the messages of the entries whose blocks it sent, in order,
        and the tokens of the blocks no entry holds besides the prompt (the placeholder results
        for calls left unanswered, a result shed or cut to fit). The stage keeps an automatic
        compaction's turn in progress out of the summary (it follows the summary verbatim), so the
        call reads the conversation before that turn — the prefix the last request cached — not
        every entry it was handed."""
        owner: dict[int, Entry] = {}
        for e in seen:
            if e.sent:
                for b in e.content:
                    owner[id(b)] = e
        picked: list[Entry] = []
        had: set[str] = set()
        extra = 0
        last = len(sent) - 1
        for i, msg in enumerate(sent):
            content = msg.get("content")
            blocks = content if isinstance(content, list) else []
            for j, b in enumerate(blocks):
                e = owner.get(id(b))
                if e is not None:
                    if e.uuid not in had:
                        had.add(e.uuid)
                        picked.append(e)
                elif not (i == last and j == len(blocks) - 1):      # the prompt is counted apart
                    extra += max(1, len(json.dumps(b, ensure_ascii=False, default=str)) // 4)
        return [self.message_of(e) for e in picked], extra

    def _reactive(self, res: PipelineResult, request: Request, reports: list) -> PipelineResult:
        """A reactive policy (`PipelineConfig.proactive` off: cc-reactive) sends the request whatever
        its size; over the window the API refuses it (prompt too long, nothing billed) and the loop
        runs its one reactive compaction, and a second when the first leaves the retry at or over
        the auto-compact threshold (agent.py `_compact_to_fit`), then sends it again."""
        assert self._loop is not None
        out = self._loop.run_until_complete(self.pipeline.compact(res.entries, trigger="reactive",
                                                                  now=request.timestamp))
        reports += out.reports
        if out.tokens < res.tokens and out.tokens >= self.pipeline.budget.autocompact_threshold:
            again = self._loop.run_until_complete(self.pipeline.compact(out.entries, trigger="reactive",
                                                                        now=request.timestamp))
            reports += again.reports
            if again.tokens < out.tokens:
                out = again
        return out

    def _forget_dead(self) -> None:
        """Drop what `message_of` remembers for entries neither the history nor the view holds any
        more (a summary replaced by the next one, a result cleared): kept, the rewritten content of
        a whole session would stay in memory. Amortised O(1): only when the maps have doubled."""
        live = len(self.history) + len(self.view)
        if len(self._origin) + len(self._made) <= 2 * live + 256:
            return
        entries = [*self.history, *self.view]
        uuids = {e.uuid for e in entries}
        ids = {id(e.message) for e in entries}
        self._origin = {u: v for u, v in self._origin.items() if u in uuids}
        self._made = {i: v for i, v in self._made.items() if i in ids}
