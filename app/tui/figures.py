"""The context and cost figures on their way to the status line and the side panes.

The loop sends figures in bursts (a model call several, a turn several model calls) and each
showing redraws the side panes: the latest of each is kept and handed down on the next frame, or
when `PANES_INTERVAL_S` has passed since the last time (four times a second is as fast as anyone
reads them). The next request's price is counted down each second from the latest figure, with the
prompt being typed added. The app owns no accounting: every number here is the loop's or the agent's."""
from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, Sequence

from textual.app import App
from textual.css.query import NoMatches

from agent_core import events as ev
from agent_core.pricing.tally import burn_rate
from compaction.estimate import estimate_text
from compaction.next_request import NextRequest

from app.tui.agent_port import AgentHandle
from app.tui.main_widgets import MainWidgets
from app.tui.side_column import SideColumn
from app.widgets import next_request as next_text
from app.widgets.context_pane import history_points

PANES_INTERVAL_S = 0.25   # the side panes and the status line take new figures at most this often

Point = tuple[int, int, bool]


class HistoryPoints:
    """The agent's `context_history` as the plot's tuples, converting only the entries added since
    the last call (the history grows by a few entries a turn, for the whole session)."""

    def __init__(self) -> None:
        self._points: list[Point] = []
        self._seen: tuple[int, Sequence[Point] | None] = (0, None)   # (entries converted, the list converted)

    def of(self, history: Sequence[Point]) -> tuple[Point, ...]:
        seen, source = self._seen
        if (source is not history or seen > len(history)     # a new agent or a cleared history
                or (seen and history_points(history[seen - 1:seen])[0] != self._points[seen - 1])):
            self._points, seen = [], 0
        self._points.extend(history_points(history[seen:]))
        self._seen = (len(history), history)
        return tuple(self._points)


def typed_tokens(text: str) -> int:
    """What the prompt being typed adds to the next request (a /command is not sent)."""
    return 0 if text.lstrip().startswith("/") or not text.strip() else estimate_text(text)


class Figures:
    """Takes the loop's ContextUpdate and CostUpdate (`context`, `cost`) and hands the latest down
    to the status line and, once mounted, the side panes; measures the cost pane's changed files."""

    def __init__(self, app: App[Any], widgets: MainWidgets, side: SideColumn,
                 agent: Callable[[], AgentHandle], clock: Callable[[], float]) -> None:
        self._app = app
        self._widgets = widgets
        self._side = side
        self._agent = agent
        self._clock = clock
        self._pending_context: ev.ContextUpdate | None = None   # not shown yet
        self._pending_cost: ev.CostUpdate | None = None
        self._shown_context: ev.ContextUpdate | None = None     # the latest handed down
        self._shown_cost: ev.CostUpdate | None = None
        self.scheduled = False          # a showing is due (next frame, or when the interval ends)
        self._shown_at = 0.0            # when the panes last got figures (time.monotonic)
        self._history = HistoryPoints()
        self._started_at: float | None = None   # this run's start, for a burn rate the agent cannot give
        # The next request's price as the latest figure gave it, and the clock then: counted down
        # each second, with the prompt being typed added (`tick`).
        self._next_base: tuple[NextRequest, float] | None = None
        self._typed_tokens = 0
        self._next_shown: NextRequest | None = None

    # ----- in -----------------------------------------------------------------------------------
    def context(self, c: ev.ContextUpdate) -> None:
        """A context figure: shown on the next frame (a model call sends several in a burst)."""
        self._pending_context = c
        self._schedule()

    def cost(self, c: ev.CostUpdate) -> None:
        self._pending_cost = c
        self._schedule()

    def typed(self, text: str) -> None:
        """The prompt being typed, for the next request's price."""
        tokens = typed_tokens(text)
        if tokens != self._typed_tokens:
            self._typed_tokens = tokens
            self.tick()

    def new_agent(self) -> None:
        """Another agent (/model, /resume, /clear): this run's burn rate starts again."""
        self._started_at = None

    def side_opened(self) -> None:
        """The side column is mounted: it gets the figures shown so far."""
        self._pending_context = self._pending_context or self._shown_context
        self._pending_cost = self._pending_cost or self._shown_cost
        self._next_shown = None
        self.flush()
        self.tick()

    # ----- out ----------------------------------------------------------------------------------
    def _schedule(self) -> None:
        """Show the latest figures on the next frame, or, when the panes were drawn less than
        `PANES_INTERVAL_S` ago, when that interval ends: each showing redraws the side panes (a
        fifth of a TUI turn's CPU when shown per frame)."""
        if self.scheduled:
            return
        self.scheduled = True
        wait = self._shown_at + PANES_INTERVAL_S - time.monotonic()
        if wait > 0:
            self._app.set_timer(wait, self.flush, name="show figures")
        else:
            self._app.call_after_refresh(self.flush)

    def flush(self) -> None:
        """Hand the latest context and cost figures down to the panes and the status line: once
        per frame however many updates came since (each pane renders, and may lay out, per set)."""
        self.scheduled = False
        self._shown_at = time.monotonic()
        c, self._pending_context = self._pending_context, None
        k, self._pending_cost = self._pending_cost, None
        if c is not None:
            self._shown_context = c
        if k is not None:
            self._shown_cost = k
        w = self._widgets
        try:
            if c is not None:
                w.status.state = c.state
                w.status.context = c
                base = next_text.from_event(c.next_request)
                self._next_base = None if base is None else (base, self._clock())
                self.tick()
            if k is not None:
                w.status.cost_usd = k.total_usd
            if not self._side.ready:    # side_opened hands them down
                return
            if c is not None:
                context_pane = w.context_pane
                context_pane.history = self._history.of(self._agent().context_history)
                context_pane.compactions = len(self._agent().compactions)
                context_pane.context = c
            if k is not None:
                cost_pane = w.cost_pane
                cost_pane.extras = self._cost_extras(k)
                cost_pane.cost = k
        except NoMatches:   # the app is closing and the widgets are gone
            pass

    def tick(self) -> None:
        """The next request's price as of now, with the prompt being typed: handed down when it
        changed (the cache's time left ticks once a second while it is warm)."""
        if self._next_base is None:
            nr = None
        else:
            base, at = self._next_base
            nr = base.later(self._clock() - at).typed(self._typed_tokens)
        if nr == self._next_shown:
            return
        self._next_shown = nr
        try:
            self._widgets.status.next_request = nr
            if self._side.ready:
                self._widgets.context_pane.next_request = nr
        except NoMatches:   # the app is closing and the widgets are gone
            pass

    def _cost_extras(self, c: ev.CostUpdate) -> dict[str, Any]:
        """The burn rate (the event carries every other figure): dollars over the session's active
        time when the agent keeps it (a resumed session shows what it showed), else over this run."""
        out: dict[str, Any] = {}
        if c.total_usd is not None and c.by_model:
            active = self._agent().active_seconds()
            if active is not None:
                burn = burn_rate(c.total_usd, 0.0, active)
            else:
                now = self._clock()
                if self._started_at is None:
                    self._started_at = now
                burn = burn_rate(c.total_usd, self._started_at, now)
            if burn is not None:
                out["burn_usd_per_hour"] = burn
        return {**out, **self._times()}

    def _times(self) -> dict[str, float]:
        """/cost's API time (the agent's model calls added up, when it keeps them) and wall time
        (the session's age: its log's creation, else its id's stamp)."""
        out: dict[str, float] = {}
        agent = self._agent()
        api = agent.api_seconds()
        if api is not None:
            out["api_s"] = float(api)
        started = agent.started_at()
        if started is not None:
            out["wall_s"] = max(0.0, self._clock() - started)
        return out

    # ----- the cost pane's changed files --------------------------------------------------------
    def refresh_changes(self) -> None:
        """The cost pane's changed files, measured off the event loop (a diff of a big file)."""
        self._app.run_worker(self._measure_changes(), group="changes", exclusive=True)

    async def _measure_changes(self) -> None:
        changed = self._agent().changed_files()
        if changed is None:
            return
        files = tuple(await asyncio.to_thread(changed.files))
        self._side.later(lambda: setattr(self._widgets.cost_pane, "changes", files))
