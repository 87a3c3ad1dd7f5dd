"""The figures a front-end shows of a session: the context count and its categories (from one
projected view, so they sum exactly), what the next request would cost warm and cold, the plot's
points, and the time spent in model calls. Read from the pipeline and the history it is handed;
nothing here writes the history or the log."""
from __future__ import annotations

from typing import Any, Sequence

from compaction import Entry, Pipeline, breakdown
from compaction.next_request import NextRequest, next_request
from compaction.accounting.tokens import CategoryTally

from agent_core import events as ev
from agent_core.loop.counting import Counter
from agent_core.loop.request_head import RequestHead

PLOT_POINTS = 240     # context-history points kept in the state snapshot (the plot shows the latest)


class Figures:
    def __init__(self, pipeline: Pipeline, head: RequestHead, counter: Counter) -> None:
        self.pipeline = pipeline
        self.head = head
        self.counter = counter
        self.tally = CategoryTally()     # the categories' estimates, kept between views (incremental)
        self.context_history: list[tuple[int, int, bool]] = []   # (turn, tokens, compacted): the plot
        self.turns = 0                   # user turns of this session (a resumed one's earlier runs included)
        # Seconds of model activity (first call to latest) in earlier runs of this session, and this
        # run's span: the burn rate is dollars over active time, so a resumed session shows the same.
        self.active_before = 0.0
        self.calls_span: tuple[float, float] | None = None
        # Seconds spent in model calls (request to last byte, summaries included): earlier runs of
        # this session (from its log) and this run; /cost shows them as API time.
        self.api_before = 0.0
        self.api_s = 0.0

    def projected(self, entries: list[Entry], view: list[Entry] | None = None,
                  tokens: int | None = None) -> tuple[list[Entry], int]:
        """`view` and `tokens` when the pipeline just made them, else the history's view replayed."""
        if view is None or tokens is None:
            return self.pipeline.view(entries)
        return view, tokens

    def context_event(self, entries: list[Entry], now: float, tokens: int | None = None,
                      view: list[Entry] | None = None) -> ev.ContextUpdate:
        """The context numbers now: the count and the categories, which sum to it exactly."""
        b = self.pipeline.budget
        view, tokens = self.projected(entries, view, tokens)
        cats = breakdown(view, tally=self.tally, system_tokens=self.head.system_tokens,
                         tools_tokens=self.head.tools_tokens, memory_tokens=self.head.memory_tokens,
                         mcp_tokens=sum(self.head.mcp_tokens.values()),
                         window=b.context_window, threshold=b.autocompact_threshold,
                         autocompact_enabled=b.autocompact_enabled, total=tokens)
        return ev.context_update(b, tokens, cats, self.counter.source(view),
                                 self.next_request(entries, now, view, tokens).to_dict())

    def next_request(self, entries: list[Entry], now: float, view: list[Entry] | None = None,
                     tokens: int | None = None) -> NextRequest:
        """What the next request holds and costs now, warm and cold, and the cache's time left."""
        view, tokens = self.projected(entries, view, tokens)
        cfg = self.pipeline.config
        return next_request(view, self.pipeline.state, tokens=tokens, now=now, ttl=cfg.cache_ttl,
                            rates=cfg.cache_rates if cfg.cache_rates_known else None,
                            head_tokens=self.pipeline.overhead_tokens,
                            last_call_at=self.calls_span[1] if self.calls_span else None)

    def status(self, entries: list[Entry], now: float, cost_usd: float | None) -> dict[str, Any]:
        """What the `context_status` tool reports: the context pane's and the cost pane's figures."""
        view, tokens = self.pipeline.view(entries)
        b = self.pipeline.budget
        nr = self.next_request(entries, now, view, tokens)
        return {"tokens": tokens, "window": b.context_window, "threshold": b.autocompact_threshold,
                "state": b.state(tokens), "percent_left": round(b.percent_left(tokens), 1),
                "cost_usd": cost_usd, "cache_ttl": self.pipeline.config.cache_ttl,
                "cache_expires_in_s": nr.cache_expires_in_s, "cached_tokens": nr.cached_tokens,
                "uncached_tokens": nr.uncached_tokens}

    def worth_saying(self, tokens: int, low: int) -> bool:
        """A figure said before the pipeline's result: at least `low`, below the blocking limit
        (blocking means nothing is sent, which only the figure after the pipeline can tell) and not
        the figure said last."""
        if not low <= tokens < self.pipeline.budget.blocking_limit:
            return False
        return not (self.context_history and self.context_history[-1][1] == tokens)

    def plotted(self, turn: int, tokens: int, compacted: bool) -> None:
        self.context_history.append((turn, tokens, compacted))

    def plot_points(self) -> Sequence[list[int | bool]]:
        return [list(p) for p in self.context_history[-PLOT_POINTS:]]

    def call_done(self, duration_s: float | None, now: float) -> None:
        """A model call finished: its time joins the API time and the active span."""
        self.api_s += max(0.0, float(duration_s or 0.0))
        self.calls_span = (self.calls_span[0] if self.calls_span else now, now)

    def api_seconds(self) -> float:
        return self.api_before + self.api_s

    def active_seconds(self) -> float:
        """Seconds between the session's first and latest model call, idle time between runs left out."""
        span = self.calls_span
        return self.active_before + (span[1] - span[0] if span else 0.0)
