"""`ctxtui watch`: the TUI's context, cost and compaction panes over a session log, live.

The screen owns no accounting: `agent_core.watch.state.WatchState` turns the log's records into
the loop's events and this screen hands them to the same widgets the main TUI uses. A big
existing log is read in a thread worker (the screen keeps drawing); then an async worker follows
the file with watchfiles and, on each change, reads only the bytes appended since. With no log
yet (an empty folder, a workspace never run), the screen says so and waits for the first one.
The activity pane (the last prompt and the tool calls since) is the one part of its own.

Every field of a log is someone else's bytes (a model name, a session id, a prompt, a tool's
argument, the file's own name): each is shown through `agent_core.security.visible_text`, as
`Content` (never markup), so `\x1b]0;TITLE\x07` in `message.model` reads `␛]0;TITLE␇` and sets
no window title.
"""
from __future__ import annotations

import asyncio
import time
from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer
from textual.worker import WorkerCancelled, WorkerFailed

from agent_core.logs import newest_log
from agent_core.watch.files import wait_for_log, watch_changes, watch_root
from agent_core.watch.state import WatchState, WatchUpdate
from agent_core.watch.target import WatchTarget, switch_candidate
from agent_core.security.visible_text import one_line, visible

from app import format as fmt
from app.widgets.context_pane import ContextPane
from app.widgets.gauge import Gauge
from app.widgets.cost_pane import CostPane
from app.widgets.timeline import WATCH_COLUMNS, Timeline
from app.widgets.update_in_place import update_in_place
from app.watch.activity_feed import ActivityFeed
from app.watch.header import WatchHeader

RESCAN_S = 2.0   # folder mode: how often a quiet watch looks for a new session the file events missed


def display_path(path: Path, cwd: Path | None = None) -> str:
    """Relative to the current folder when inside it, else with ~ for the home folder; on one
    line, control characters shown."""
    if cwd is not None:
        try:
            return one_line(str(path.relative_to(cwd)))
        except ValueError:
            pass
    return fmt.path(path)


class WatchScreen(Screen):
    """See module docstring. `live=False` reads the log once and does not follow it."""

    BINDINGS = [Binding("q", "app.quit", "Quit"),
                Binding("c", "toggle_cost", "Cost pane")]

    def __init__(self, target: WatchTarget, *, context_window: int | None = None, force_polling: bool = False,
                 live: bool = True, cwd: Path | None = None) -> None:
        super().__init__()
        self.target = target
        self.context_window = context_window
        self.force_polling = force_polling
        self.live = live
        self.cwd = cwd
        self.state: WatchState | None = (WatchState(target.log, context_window=context_window)
                                         if target.log is not None else None)
        self.followed: set[Path] = {target.log} if target.log is not None else set()
        self.phase = "starting"              # waiting | loading | following | read | error
        self.error: str | None = None
        self.updates = 0                     # polls that changed something (tests, bench)
        self.last_update_at: float | None = None
        self.loaded = asyncio.Event()        # set after each (re)load: tests and the bench wait on it
        self._stop = asyncio.Event()         # ends awatch's thread promptly on exit

    def compose(self) -> ComposeResult:
        yield WatchHeader(id="watch-header")
        with Horizontal(id="watch-top"):
            yield ContextPane(id="context-pane")
            yield Timeline(columns=WATCH_COLUMNS, id="watch-timeline")
        yield ActivityFeed(id="watch-activity")
        yield CostPane(id="cost-pane")
        yield Footer()

    @property
    def context_pane(self) -> ContextPane:
        return self.query_one(ContextPane)

    @property
    def cost_pane(self) -> CostPane:
        return self.query_one(CostPane)

    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    @property
    def activity(self) -> ActivityFeed:
        return self.query_one(ActivityFeed)

    def _followed(self) -> WatchState:
        """The state of the log being read: there is one from the moment a log is known (`_wait`)."""
        if self.state is None:
            raise RuntimeError("no session log is followed yet")
        return self.state

    def on_mount(self) -> None:
        self.activity.border_title = "Activity"
        self.activity.show(self.state)
        self._render_header()
        self.follow()

    def on_unmount(self) -> None:
        self._stop.set()

    def action_toggle_cost(self) -> None:
        if self.maximized is self.cost_pane:
            self.minimize()
        else:
            self.maximize(self.cost_pane, container=False)

    # ----- reading -------------------------------------------------------------------------------
    async def _wait(self) -> bool:
        """No log yet: say where one is waited for, and take the first that appears."""
        self.phase = "waiting"
        self._render_header()
        try:
            found = await wait_for_log(self.target, force_polling=self.force_polling, stop_event=self._stop)
        except OSError as e:             # the folder removed or unreadable while waiting: say so
            self._fail(e)
            return False
        if found is None or found.log is None:
            return False
        self.target = found
        self.state = WatchState(found.log, context_window=self.context_window)
        self.followed.add(found.log)
        self.notify(f"Now following {display_path(found.log, self.cwd)}.", title="A session log appeared",
                    markup=False)
        return True

    async def _load(self) -> None:
        """Read the whole log so far in a thread worker, then show it all."""
        self.phase = "loading"
        self._render_header()
        worker = self.run_worker(self._followed().poll, thread=True, group="watch-load", exit_on_error=False)
        progress = self.set_interval(0.25, self._render_header)     # "reading 40.1 of 100.0 MB…"
        try:
            await worker.wait()
        except WorkerFailed as e:
            self._fail(e.error)
            return
        except WorkerCancelled:
            return
        finally:
            progress.stop()
        self.phase = "following" if self.live else "read"
        self._show_all()
        self.loaded.set()

    def _fail(self, error: BaseException) -> None:
        self.phase = "error"
        self.error = visible(f"{type(error).__name__}: {error}" if not isinstance(error, OSError) else str(error))
        self._render_header()

    @work(exclusive=True, group="watch")
    async def follow(self) -> None:
        if self.state is None and not await self._wait():
            return
        await self._load()
        if not self.live or self.phase == "error":
            return
        root, recursive = watch_root(self.target, self._followed().path)
        last_scan = time.monotonic()
        async for changed in watch_changes(root, recursive=recursive, force_polling=self.force_polling,
                                           stop_event=self._stop):
            if self.target.folder is not None:
                if not changed and time.monotonic() - last_scan > RESCAN_S:
                    # A log written right after its folder was created can slip past the file
                    # events (the folder was not watched yet): look for it now and then.
                    last_scan = time.monotonic()
                    newest = await asyncio.to_thread(newest_log, self.target.folder)
                    changed = {str(newest)} if newest is not None else set()
                newer = (switch_candidate(changed, current=self._followed().path, followed=self.followed)
                         if changed else None)
                if newer is not None:
                    await self._switch(newer)
                    continue
            state = self._followed()
            try:
                update = state.poll()
                if not state.path.exists():
                    raise FileNotFoundError(f"{state.path.name} was removed; waiting for it to come back")
            except OSError as e:           # removed, or permission changed under us: say so, keep watching
                if self.error != visible(str(e)):
                    self._fail(e)
                continue
            if self.phase == "error":
                self.phase, self.error = "following", None
                self._render_header()
            if update.reset:
                self._reset_panes()
                self._show_all()
                self.notify(f"{one_line(state.path.name)} was replaced or rewritten: read again from its start.",
                            title="Log re-read", markup=False)
                continue
            self._apply(update)

    async def _switch(self, path: Path) -> None:
        old = self._followed().path
        self.followed.add(path)
        self.state = WatchState(path, context_window=self.context_window)
        self.loaded.clear()
        self._reset_panes()
        self.notify(f"A newer session appeared: now following {display_path(path, self.cwd)} "
                    f"(was {one_line(old.name)}).", title="Switched session", markup=False)
        await self._load()

    # ----- state → widgets -----------------------------------------------------------------------
    def _reset_panes(self) -> None:
        pane = self.context_pane
        pane.history = ()
        pane.context = None
        pane.query_one(Gauge).tokens = 0
        self.cost_pane.cost = None
        self.timeline.reset()
        self.activity.show(None)

    def _show_all(self) -> None:
        s = self._followed()
        self._apply(WatchUpdate(context=s.context_event(), cost=s.cost.event() if s.cost.models else None,
                                compactions=list(s.compactions.values()), header_changed=True))
        self.activity.show(s)

    def _apply(self, up: WatchUpdate) -> None:
        if not up.changed:
            return
        s = self._followed()
        if up.context is not None:
            pane = self.context_pane
            pane.history = s.history_points()
            pane.context = up.context
        if up.cost is not None:
            cost_pane = self.cost_pane
            cost_pane.extras = s.cost_extras()
            cost_pane.cost = up.cost
        timeline = self.timeline
        for v in up.compactions:
            timeline.add_view(v)
        if up.activity or up.cache_misses or up.reset:
            self.activity.show(s)
        self._render_header()
        self.updates += 1
        self.last_update_at = time.perf_counter()

    def _render_header(self) -> None:
        s = self.state
        header = self.query_one(WatchHeader)
        if s is None:
            where = " or ".join(display_path(f, self.cwd) for f in self.target.waiting)
            if self.phase == "error":
                header.update(Content.assemble((f"✗ {self.error}", "bold $error"), f" (waiting in {where})"))
                return
            header.update(Content.assemble(
                ("◌ waiting for a session log", "bold $warning"), f" in {where}", "\n",
                ("start Claude Code or ctxtui there; it is picked up as soon as it is written", "$foreground-muted")))
            return
        status = {"starting": ("starting…", "$foreground-muted"),
                  "loading": (f"reading {fmt.size(s.main_reader.offset)} of {fmt.size(_size(s.path))}…",
                              "bold $warning"),
                  "following": ("● following live" + (" (polling)" if self.force_polling else ""), "bold $success"),
                  "read": ("read once", "$foreground-muted"),
                  "error": (f"✗ {self.error}", "bold $error")}[self.phase]
        sep = ("  ·  ", "dim")
        line1: list = [(display_path(s.path, self.cwd), "bold"), sep, one_line(s.source_name), sep, status]
        if s.session_id and s.session_id != s.path.stem:
            line1[4:4] = [("session ", "dim"), (one_line(s.session_id), "bold"), sep]
        b = s.budget
        line2 = [("model ", "dim"), (one_line(s.model or "—"), "bold"), sep,
                 ("window ", "dim"), fmt.tokens(b.context_window), (f" ({one_line(s.info.window_source)})", "dim"),
                 sep,
                 ("auto-compact at ", "dim"), fmt.tokens(b.autocompact_threshold), sep,
                 ("blocking at ", "dim"), fmt.tokens(b.blocking_limit)]
        n = len(s.compactions)
        line3: list = [f"{s.responses:,} response{'' if s.responses == 1 else 's'}", sep,
                       f"{n} compaction{'' if n == 1 else 's'}"]
        if s.last_output is not None:       # not part of the context figure (Claude Code's count)
            line3 += [sep, ("last output ", "dim"), fmt.tokens(s.last_output)]
        if s.subagent_logs:
            line3 += [sep, f"{s.subagent_logs} sub-agent log{'' if s.subagent_logs == 1 else 's'}"]
        if s.skipped:
            first = s.first_corrupt_line
            where = f" (first at line {first:,})" if first else ""
            line3 += [sep, (f"⚠ {s.skipped:,} corrupt or cut-off line{'' if s.skipped == 1 else 's'} "
                            f"skipped{where}", "bold $warning")]
        parts: list = [*line1, "\n", *line2, "\n", *line3]
        update_in_place(header, Content.assemble(*parts))    # a new count lays out nothing: same lines


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
