"""Session memory (pipeline layer 5): deterministic notes kept from the history as it grows, and
the compaction that uses them as the summary instead of asking a model.

The notes record what a summary must not lose — the user's requests, files read and changed,
commands with their exit codes, errors and what fixed them, decisions, the current step — and
are updated from new entries only (O(new entries) per turn). They live as plain JSON in
`PipelineState.of("session_memory")`, so they survive a resume and later compactions.

The user's requests are kept verbatim (a very long one by its head and tail, as collapse keeps
it): they are what a summary must not lose, so they have a budget of their own (a quarter of the
auto-compact threshold) next to the notes' budget for the rest; past it the oldest go, but the first.

At compact time the notes replace the older history and a verbatim tail is kept (CC: at least
10,000 tokens and 5 messages with text, at most 40,000), cut only where no tool pair and no
response split across entries would be separated. The stage declines (None, so the LLM stage
runs) when the notes are empty, when a manual focus asks for a model summary, or when the
result would still be above the auto-compact threshold.

Under the threshold (`ctx.early`) it acts only when compacting now pays in dollars: the next call
writes the short history instead of reading the long one, every later call reads less
(cache_economics.compaction_verdict — on a cold cache the rewrite is free), by a margin (3x, as
microcompact and collapse), and after the price of what the agent would have to read again
(`reread_estimate`: the current task's results for certain, older file reads likely). A cheap
lower bound of the result is judged first, so a turn where it cannot pay costs O(1); its report
carries the verdict and those figures in `details["cache"]`.
"""
from __future__ import annotations

import re
import time
from typing import Any, Sequence

from compaction import cache_economics as ce
from compaction.layers.collapse import head_and_tail
from compaction.entry import Entry, boundary, user
from compaction.layer_context import LayerContext, PipelineState
from compaction.layerkit import runtime
from compaction.layers.ptl import is_retry_marker
from compaction.mentioned_files import mentioned
from compaction.reinject import ReadFile, reinject
from compaction.report import CompactionReport, LayerResult
from compaction.summarizing import SummarizeConfig, check_new_history, failed, reanchor, save_transcript
from compaction.summary_prompt import summary_message
from compaction.accounting.tokens import anchor_index, count_tokens, estimate_text

STATE_KEY = "session_memory"
RECENT_UUIDS = 64
CAPS = {"requests": 400, "commands": 40, "searches": 40, "errors": 30, "decisions": 30, "files_read": 60,
        "files_changed": 60}
PENDING_CAP = 200
REQUESTS_SHARE = 0.25   # the user's requests in the notes: up to this share of the auto-compact threshold
                        # (beyond the notes' own budget: they are what must stay verbatim)
EARLY_SLACK = 0.9    # the pre-check trusts the last full check's result size to this share (the notes
                     # and the tail change as the history grows)

_EXIT = [re.compile(p, re.I) for p in (
    r"exit(?:ed)?[ _]?(?:code|status)\s*[:=]?\s*(-?\d+)",
    r"\[exit\s+(-?\d+)\]",
    r"return\s*code\s*[:=]?\s*(-?\d+)",
    r"returncode\s*[:=]\s*(-?\d+)",
)]
_DECISION = re.compile(r"\b(I'll|I will|I'm going to|we'll|we should|decided|decision|instead|chose|choose|"
                       r"switch(?:ed)? to|the plan is|approach)\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _clip(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _tail(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else "…" + s[-(n - 1):]


def _verbatim(text: str) -> str:
    """A user request as the notes keep it: word for word, or a very long one by its head and tail."""
    return head_and_tail(text.strip(), "the whole message is in the transcript")


def _result_text(block: dict[str, Any]) -> str:
    c = block.get("content", "")
    if isinstance(c, str):
        return c
    return "\n".join(b.get("text", "") for b in c if b.get("type") == "text")


def exit_code(text: str, is_error: bool) -> str:
    """The exit code a bash result reports (the last one mentioned: our bash tool ends its output
    with `exit code N`), else "error"/"ok" from its error flag."""
    best: tuple[int, str] | None = None
    for rx in _EXIT:
        for m in rx.finditer(text or ""):
            if best is None or m.start() > best[0]:
                best = (m.start(), m.group(1))
    if best is not None:
        return best[1]
    return "error" if is_error else "ok"


def _what(name: str, inp: dict[str, Any]) -> str:
    if not isinstance(inp, dict):
        return ""
    for k in ("path", "command", "pattern", "focus"):
        if isinstance(inp.get(k), str):
            return _clip(inp[k], 200)
    return ""


class SessionNotes:
    """A view over the JSON dict holding the notes; methods mutate it in place."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.s = state
        for k, v in (("seq", 0), ("recent", []), ("last_ts", None), ("pending", {}), ("requests", []),
                     ("files_read", {}), ("files_changed", {}), ("commands", []), ("searches", []), ("errors", []),
                     ("decisions", []), ("current", None)):
            self.s.setdefault(k, v)

    # --- updating ----------------------------------------------------------------------------
    def update(self, entries: Sequence[Entry]) -> int:
        """Take in the entries not seen yet; returns how many were processed.

        New means: a uuid not among the last ones processed and a timestamp not older than the
        newest processed. Walking back from the end stops at the first entry that is not new, so
        a turn costs O(new entries) even though layers rewrite and drop older ones, and the old
        user messages an LLM compaction keeps are not taken in twice."""
        known = set(self.s["recent"])
        last = self.s["last_ts"]
        i = len(entries)
        while i > 0 and entries[i - 1].uuid not in known and (last is None or entries[i - 1].timestamp >= last):
            i -= 1
        n = 0
        for e in entries[i:]:
            if e.uuid in known or (last is not None and e.timestamp < last):
                continue
            self._observe(e)
            self.s["recent"].append(e.uuid)
            known.add(e.uuid)
            last = e.timestamp if last is None else max(last, e.timestamp)
            n += 1
        self.s["last_ts"] = last
        if len(self.s["recent"]) > RECENT_UUIDS:
            del self.s["recent"][:-RECENT_UUIDS]
        return n

    def _push(self, key: str, item: Any) -> None:
        lst = self.s[key]
        lst.append(item)
        cap = CAPS[key]
        if len(lst) > cap:
            # the first request states the task: keep it
            del lst[1 if key == "requests" else 0]

    def _file(self, key: str, path: str, op: str | None = None) -> None:
        files = self.s[key]
        rec = files.setdefault(path, {"count": 0, "last": 0} if op is None else {"ops": {}, "last": 0})
        if op is None:
            rec["count"] += 1
        else:
            rec["ops"][op] = rec["ops"].get(op, 0) + 1
        rec["last"] = self.s["seq"]
        if len(files) > CAPS[key]:
            oldest = min(files, key=lambda p: files[p]["last"])
            del files[oldest]

    def _observe(self, e: Entry) -> None:
        self.s["seq"] += 1
        if e.kind != "message" or not e.sent:
            return
        if e.role == "assistant":
            for b in e.content:
                if b.get("type") == "tool_use":
                    raw = b.get("input")
                    inp: dict[str, Any] = raw if isinstance(raw, dict) else {}
                    self.s["pending"][b["id"]] = {"name": b.get("name", "?"), "what": _what(b.get("name", ""), inp)}
                    if len(self.s["pending"]) > PENDING_CAP:
                        del self.s["pending"][next(iter(self.s["pending"]))]
            text = e.text().strip()
            if text:
                self.s["current"] = {"text": _tail(text, 600), "seq": self.s["seq"]}
                for sent in _SENTENCE.split(text):
                    if _DECISION.search(sent) and len(sent.strip()) > 12:
                        self._push("decisions", _clip(sent, 240))
            return
        attached = mentioned(e)      # files the user attached with @path: read, not typed
        skip = {m.block for m in attached}
        texts = [b.get("text", "") for i, b in enumerate(e.content)
                 if i not in skip and b.get("type") == "text" and str(b.get("text", "")).strip()]
        for m in attached:
            self._file("files_read", m.path)
        for b in e.content:
            if b.get("type") == "tool_result":
                call = self.s["pending"].pop(b.get("tool_use_id"), None)
                if call is not None:
                    self._result(call["name"], call["what"], _result_text(b), bool(b.get("is_error")))
        if texts:
            self._push("requests", _verbatim("\n".join(texts)))

    def _result(self, name: str, what: str, text: str, is_error: bool) -> None:
        ok = not is_error
        if name == "bash":
            code = exit_code(text, is_error)
            ok = code in ("0", "ok")
            self._push("commands", {"command": what, "exit": code})
        elif ok and name == "read_file" and what:
            self._file("files_read", what)
        elif ok and name in ("write_file", "edit_file") and what:
            self._file("files_changed", what, name)
        elif ok and name in ("grep", "glob") and what:
            self._push("searches", f"{name} `{what}`")
        if not ok:
            snippet = _tail(text, 240) if name == "bash" else _clip(text, 240)
            self._push("errors", {"tool": name, "what": what, "error": snippet or "(no output)", "fixed": None})
        else:
            for err in self.s["errors"]:
                if err["fixed"] is None and err["tool"] == name and err["what"] == what:
                    err["fixed"] = f"a later {name} of the same {'command' if name == 'bash' else 'target'} succeeded"

    # --- reading -----------------------------------------------------------------------------
    def is_empty(self) -> bool:
        s = self.s
        return not (s["requests"] or s["files_read"] or s["files_changed"] or s["commands"] or s["errors"]
                    or s["decisions"])

    def _sections(self) -> list[tuple[str, list[str]]]:
        s = self.s

        def by_recent(d: dict[str, dict[str, Any]]) -> list[str]:
            return sorted(d, key=lambda p: d[p]["last"])
        return [
            ("User requests, oldest first", [f"- {r}" for r in s["requests"]]),
            ("Files read", [f"- {p} (read {s['files_read'][p]['count']}×)" for p in by_recent(s["files_read"])]),
            ("Files changed", [f"- {p}: " + ", ".join(f"{op} ×{n}" for op, n in s["files_changed"][p]["ops"].items())
                               for p in by_recent(s["files_changed"])]),
            ("Commands and exit codes", [f"- `{c['command']}` → {c['exit']}" for c in s["commands"]]),
            ("Searches", [f"- {x}" for x in s["searches"]]),
            ("Errors and fixes", [f"- {x['tool']} {x['what']}: {x['error']}"
                                  + (f" — fixed: {x['fixed']}" if x["fixed"] else " — not fixed yet")
                                  for x in s["errors"]]),
            ("Decisions", [f"- {d}" for d in s["decisions"]]),
            ("Current work (latest assistant message)", [s["current"]["text"]] if s["current"] else []),
        ]

    def render(self, max_tokens: int = 8_000, requests_max_tokens: int | None = None) -> str:
        """The notes as a summary: the user's requests within `requests_max_tokens` (default
        `max_tokens`; past it the oldest go, but the first), everything else within `max_tokens`
        (the oldest items of the longest section go first; the current work stays). Sizes are
        summed per line (estimated), so this is linear in the notes."""
        sections = self._sections()
        req_budget = max_tokens if requests_max_tokens is None else requests_max_tokens
        sizes = [[estimate_text(line) + 1 for line in lines] for _title, lines in sections]
        req, rest = sizes[0], sizes[1:]
        total_req, total_rest = sum(req), sum(map(sum, rest))
        drop_req = 0                      # requests dropped after the first
        while total_req > req_budget and len(req) - drop_req > 1:
            total_req -= req[1 + drop_req]
            drop_req += 1
        cut = [0] * len(rest)             # items dropped from the front of each other section
        last = len(rest) - 1              # the current work: never dropped
        while total_rest > max_tokens:
            left = [(len(rest[k]) - cut[k], k) for k in range(len(rest)) if k != last and len(rest[k]) > cut[k]]
            if not left:
                break
            _n, k = max(left)
            total_rest -= rest[k][cut[k]]
            cut[k] += 1
        kept = [(sections[0][0], sections[0][1][:1] + sections[0][1][1 + drop_req:])]
        kept += [(title, lines[cut[k]:]) for k, (title, lines) in enumerate(sections[1:])]
        parts = ["Session notes, kept automatically from the conversation:"]
        parts += [f"## {title}\n" + "\n".join(lines) for title, lines in kept if lines]
        return "\n\n".join(parts)


def safe_cuts(entries: Sequence[Entry]) -> list[bool]:
    """safe[i]: the history may be cut before entry i without separating a tool_use from its
    tool_result or the entries of one response (same response id). safe[len] is True."""
    n = len(entries)
    diff = [0] * (n + 2)
    use_at: dict[str, int] = {}
    first_rid: dict[str, int] = {}
    last_rid: dict[str, int] = {}
    for j, e in enumerate(entries):
        if not e.sent:
            continue
        for b in e.content:
            if b.get("type") == "tool_use":
                use_at[b["id"]] = j
            elif b.get("type") == "tool_result" and b.get("tool_use_id") in use_at:
                u = use_at[b["tool_use_id"]]
                diff[u + 1] += 1
                diff[j + 1] -= 1
        if e.role == "assistant" and e.response_id is not None:
            first_rid.setdefault(e.response_id, j)
            last_rid[e.response_id] = j
    for rid, f in first_rid.items():
        diff[f + 1] += 1
        diff[last_rid[rid] + 1] -= 1
    safe, run = [], 0
    for i in range(n + 1):
        run += diff[i]
        safe.append(run == 0)
    return safe


def keep_start(entries: Sequence[Entry], min_tokens: int, min_text: int, max_tokens: int) -> int:
    """Index where the verbatim tail starts (len(entries) = keep nothing).

    Walk back from the end until both minimums are met, without passing `max_tokens` or the last
    compact boundary; then move to a safe cut: back if that still fits under the maximum, else
    forward."""
    n = len(entries)
    floor = 0
    for i in range(n - 1, -1, -1):
        if entries[i].kind == "compact_boundary":
            floor = i + 1
            break
    suffix = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix[i] = suffix[i + 1] + entries[i].tokens
    start, texts = n, 0
    for i in range(n - 1, floor - 1, -1):
        if suffix[i] > max_tokens:
            break
        start = i
        if entries[i].sent and any(b.get("type") == "text" and str(b.get("text", "")).strip()
                                   for b in entries[i].content):
            texts += 1
        if suffix[i] >= min_tokens and texts >= min_text:
            break
    safe = safe_cuts(entries)
    back = next((i for i in range(start, floor - 1, -1) if safe[i]), None)
    if back is not None and suffix[back] <= max_tokens:
        return back
    return next(i for i in range(start, n + 1) if safe[i])


def _has_text(e: Entry) -> bool:
    return any(b.get("type") == "text" and str(b.get("text", "")).strip() for b in e.content)


def current_round(entries: Sequence[Entry], safe: Sequence[bool] | None = None) -> tuple[int, int | None]:
    """What a compaction must never cut into: (cut, prompt).

    `cut` is the latest safe cut at or before the first tool result the model has not seen yet
    (the results after the last assistant message, with the calls they answer); len(entries)
    when there is none. `prompt` is the index of the newest user prompt (a user message with
    text), or None."""
    n = len(entries)
    last_assistant = next((i for i in range(n - 1, -1, -1)
                           if entries[i].sent and entries[i].role == "assistant"), -1)
    unseen = next((i for i in range(last_assistant + 1, n)
                   if entries[i].sent and entries[i].role == "user"
                   and any(b.get("type") == "tool_result" for b in entries[i].content)), None)
    cut = n
    if unseen is not None:
        safe = safe if safe is not None else safe_cuts(entries)
        cut = next(i for i in range(unseen, -1, -1) if safe[i])
    prompt = next((i for i in range(n - 1, -1, -1)
                   if entries[i].kind == "message" and entries[i].sent and entries[i].role == "user"
                   and not is_retry_marker(entries[i]) and _has_text(entries[i])), None)
    return cut, prompt


class SessionMemoryStage:
    """Layer 5. Also keeps the notes current: the pipeline calls `observe` on every turn."""

    name = "session_memory"
    early = True      # needs no model: may act under the threshold when that pays (ctx.early)

    def __init__(self, config: SummarizeConfig | None = None, read_file: ReadFile | None = None) -> None:
        self.config = config or SummarizeConfig()
        self.read_file = read_file

    @staticmethod
    def notes(state: PipelineState) -> SessionNotes:
        return SessionNotes(state.of(STATE_KEY))

    def observe(self, entries: Sequence[Entry], state: PipelineState) -> None:
        self.notes(state).update(entries)

    def _tail_limits(self, ctx: LayerContext) -> tuple[int, int]:
        """(min, max) tokens of the verbatim tail: CC's at the threshold; under it the `sm_early_*`
        knobs, by default the same (a shorter tail lost the reads asked for next, issue 49)."""
        cfg, window = self.config, ctx.budget.context_window
        if ctx.early:
            return cfg.limit("sm_early_min_tokens", window), cfg.limit("sm_early_max_tokens", window)
        return cfg.limit("sm_min_tokens", window), cfg.limit("sm_max_tokens", window)

    def _may_pay(self, entries: Sequence[Entry], ctx: LayerContext) -> bool:
        """O(1) pre-check under the threshold: would compacting pay even if it left only the head,
        the smallest tail and nothing else — or what the last full check found it would leave and
        lose to re-reads, if the history has not been compacted since? A compaction that leaves
        more, or removes more, never pays more.
        No response yet: nothing is known of the cache or the growth, so nothing is due."""
        if anchor_index(entries) is None:
            return False
        floor = ctx.config.overhead_tokens + self._tail_limits(ctx)[0]
        rt = runtime(ctx.state, self.name)
        floor = max(floor, int(rt.get("early_after", 0) * EARLY_SLACK))
        lost = ce.Reread(usd=float(rt.get("early_lost", 0.0)) * EARLY_SLACK)   # it loses more as the history grows
        return ce.judge_compaction(entries, ctx, min(floor, ctx.tokens), lost=lost).act

    async def __call__(self, entries: list[Entry], ctx: LayerContext) -> LayerResult | None:
        t0 = time.monotonic()
        cfg, window = self.config, ctx.budget.context_window
        if not cfg.session_memory or (ctx.instructions and ctx.instructions.strip()):
            return None
        if ctx.early and not self._may_pay(entries, ctx):
            return None
        notes = self.notes(ctx.state)
        notes.update(entries)
        if notes.is_empty():
            return None
        lo, hi = self._tail_limits(ctx)
        start = keep_start(entries, lo, cfg.sm_min_text_messages, hi)
        # The current round is never cut into: the results the model has not seen yet stay with
        # their calls, and the newest prompt stays verbatim (ahead of the tail when the tail starts
        # after it). When they alone do not fit, the checks below decline and the LLM stage runs.
        cut, prompt = current_round(entries)
        start = min(start, cut)
        if not any(e.sent for e in entries[:start] if e.kind == "message"):
            return None   # nothing older than the tail to replace
        kept = [e for e in entries[start:] if e.kind != "compact_boundary"]
        if prompt is not None and prompt < start:
            p = entries[prompt]
            texts = [b for b in p.content if b.get("type") == "text" and str(b.get("text", "")).strip()]
            kept.insert(0, p if len(texts) == len(p.content) else p.with_content(texts))
        if not kept:
            return None   # a summary with nothing verbatim after it would lose the current request
        overhead = ctx.config.overhead_tokens
        summary_text = notes.render(cfg.limit("notes_max_tokens", window),
                                    int(REQUESTS_SHARE * ctx.budget.autocompact_threshold))
        # The files read most recently come back, as after an LLM summary (CC's budgets, scaled to
        # the window): notes name a file, they cannot hold what it says. Judged on the contents as
        # last read; read again from disk only once it acts.
        async def attachments(read_file: ReadFile | None) -> list[Entry]:
            return await reinject(entries[:start], kept, read_file=read_file, max_files=cfg.reinject_files,
                                  file_tokens=cfg.limit("reinject_file_tokens", window),
                                  total_tokens=cfg.limit("reinject_total_tokens", window))
        files = await attachments(None)

        def build(path: str | None) -> tuple[list[Entry], int]:
            note = user(summary_message(summary_text, path, recent_kept=bool(kept), auto=ctx.trigger != "manual",
                                        source="notes"), kind="summary", layer=self.name, transcript_path=path)
            body = reanchor([note, *files, *kept], overhead, ctx.config.count_ratio)
            return body, count_tokens(body, overhead, ctx.config.count_ratio)

        body, after = build("?" * 80)
        threshold = ctx.budget.autocompact_threshold
        if after >= threshold or after >= ctx.tokens or check_new_history(body):
            return None   # the LLM stage may do better
        # What the agent would have to read again: the current task's results for certain, older reads likely.
        lost = ce.reread_estimate(entries[:start], len(entries) if prompt is None else prompt, after_tokens=after,
                                  rates=ctx.config.cache_rates, ttl=ctx.config.cache_ttl,
                                  restored={str(f.meta["path"]) for f in files
                                            if not f.meta.get("partial") and not f.meta.get("left_out")})
        verdict = ce.judge_compaction(entries, ctx, after, lost=lost)
        if ctx.early and not verdict.act:
            rt = runtime(ctx.state, self.name)        # what it would leave and lose: the next pre-check
            rt["early_after"], rt["early_lost"] = after, lost.usd
            return None
        path, why = save_transcript(ctx, entries, cfg.require_transcript)
        if why:
            # under the threshold nothing is due: not compacting is no failure
            return None if ctx.early else failed(self.name, ctx, why, entries, t0)
        if self.read_file is not None:
            files = await attachments(self.read_file)     # their current contents (edits since the read)
        body, after = build(path)
        if after >= ctx.tokens:
            return None
        new = [boundary(ctx.trigger, ctx.tokens, after, path, self.name), *body]
        runtime(ctx.state, self.name).pop("early_after", None)
        runtime(ctx.state, self.name).pop("early_lost", None)
        report = CompactionReport(
            layer=self.name, trigger=ctx.trigger,
            action=(f"Replaced {start} older entries by the session notes ({ctx.tokens:,} → {after:,} tokens); "
                    f"kept the last {len(kept)} entries verbatim"
                    + (f" and re-attached {len(files)} recently read file(s)" if files else "")
                    + (" (the current prompt included)" if prompt is not None and prompt < start else "")
                    + (f"; under the threshold because it pays: {ce.describe(verdict)}" if ctx.early else "")),
            tokens_before=ctx.tokens, tokens_after=after, duration_s=time.monotonic() - t0, transcript_path=path,
            details={"kept_entries": len(kept), "summary_tokens": body[0].tokens,
                     "files": [f.meta["path"] for f in files],
                     "kept_tokens": sum(e.tokens for e in kept), "early": ctx.early, "cache": verdict.details()})
        return LayerResult(new, report)
