"""The `ctxtui replay` screen: progress while the logs are replayed, then plots and a table per session.

The replay runs once, in a thread worker (big logs take a while); the worker only posts messages,
the screen alone touches widgets. Progress ("reading 34 MB of 247 MB", then "policy 2 of 4 (cc) ·
request 1,200 of 4,000") reaches the screen as messages, at most one every `PROGRESS_INTERVAL`
seconds whatever the loader reports. A loader error becomes a message saying what to do, never a
traceback. Several sessions are picked with tabs (tab/shift+tab or j/k). At 110 columns and more
the plots sit side by side and the table beside the notes; narrower they stack and the body scrolls.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Label, ProgressBar, Static, Tab, Tabs

from agent_core.replay.report import doctor_lines
from agent_core.replay.report_model import ReplayReport, SessionResult
from agent_core.security.visible_text import one_line, visible

from app import format as fmt
from app.replay.report import describe_failure, recorded_text, session_label, totals_parts, validation_text
from app.replay.header import ReplayHeader
from app.replay.plots import ReplayContextPlot, ReplayCostPlot
from app.replay.table import PolicyTable

Progress = Callable[[str, float], None]
Loader = Callable[[Any, Progress], ReplayReport]

HELP = Content.assemble(
    ("keys  ", "bold $accent"), ("tab", "bold"), "/", ("j", "bold"), " next session  ",
    ("shift+tab", "bold"), "/", ("k", "bold"), " previous  ", ("←/→", "bold"), " on the tabs  ",
    ("?", "bold"), " this help  ", ("q", "bold"), " quit\n",
    ("plots ", "bold $accent"), "left: tokens sent per request under each policy, the grey line is the "
    "window and each glyph a compaction (glyph per layer). right: dollars spent so far.\n",
    ("table ", "bold $accent"), "one column per policy: dollars by bucket, the ratio to cc, the dollars "
    "net of re-reads (each use of a file whose content was dropped charged a read again) and their ratio "
    "to cc's, requests over the window, compactions by layer, cache hit rate, and how many user messages "
    "and referenced files/identifiers were still in the context the policy would have sent, and how "
    "many uses of a file read earlier still had its content there.")


class ReplayScreen(Screen):
    """See module docstring."""

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    PROGRESS_INTERVAL = 0.05             # seconds between two progress messages, at most
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("tab,j", "next_session", "Next session", priority=True),
        Binding("shift+tab,k", "previous_session", "Previous", priority=True),
        Binding("question_mark", "toggle_help", "Help"),
        Binding("escape", "hide_help", "Close help", show=False),
    ]

    class Progressed(Message, bubble=False):
        def __init__(self, label: str, fraction: float) -> None:
            super().__init__()
            self.label, self.fraction = label, fraction

    class Loaded(Message, bubble=False):
        def __init__(self, report: ReplayReport) -> None:
            super().__init__()
            self.report = report

    class Failed(Message, bubble=False):
        def __init__(self, error: BaseException) -> None:
            super().__init__()
            self.error = error

    def __init__(self, options: Any, load: Loader) -> None:
        super().__init__()
        self.options = options
        self.load = load
        self.phase = "loading"               # loading | loaded | error
        self.result: ReplayReport | None = None
        self.error: tuple[str, str] | None = None   # (what went wrong, what to do)
        self.index = 0                       # the session shown
        self.done = asyncio.Event()          # set once loaded or failed: tests wait on it

    def compose(self) -> ComposeResult:
        yield ReplayHeader(Content.styled("ctxtui replay · reading the logs…", "bold"), id="replay-header")
        with Vertical(id="replay-loading"):
            yield Label("starting…", id="replay-progress-label")
            yield ProgressBar(total=100, show_eta=False, id="replay-progress")
        yield Static(id="replay-error")
        with Vertical(id="replay-body"):
            yield Tabs(id="replay-tabs")
            yield Static(id="replay-session")
            with VerticalScroll(id="replay-scroll"):
                with Container(id="replay-plots"):
                    yield ReplayContextPlot(id="replay-context-plot")
                    yield ReplayCostPlot(id="replay-cost-plot")
                with Container(id="replay-details"):
                    yield PolicyTable(id="replay-table")
                    yield Static(id="replay-notes")
        yield Static(HELP, id="replay-help")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#replay-error").display = False
        self.query_one("#replay-body").display = False
        self.query_one("#replay-help").display = False
        self.run_load()

    # ----- the worker: reads and replays, posts messages only ---------------------------------------
    @work(thread=True, exclusive=True, group="replay-load", exit_on_error=False)
    def run_load(self) -> None:
        last: tuple[str, int] | None = None
        posted = 0.0
        pending: tuple[str, int] | None = None

        def post(step: tuple[str, int]) -> None:
            nonlocal last, posted, pending
            last, posted, pending = step, time.monotonic(), None
            self.post_message(self.Progressed(step[0], step[1] / 1000))

        def progress(label: str, fraction: float) -> None:
            nonlocal pending
            step = (str(label), int(max(0.0, min(1.0, float(fraction))) * 1000))
            if step == last:              # a big log reports often: post only what changes the bar
                return
            if last is not None and time.monotonic() - posted < self.PROGRESS_INTERVAL:
                pending = step            # too soon: the newest is posted next time, or at the end
                return
            post(step)

        try:
            report = self.load(self.options, progress)
        except Exception as e:   # every loader failure is shown on the screen
            self.post_message(self.Failed(e))
        else:
            if pending is not None:
                post(pending)
            self.post_message(self.Loaded(report))

    def on_replay_screen_progressed(self, message: Progressed) -> None:
        if self.phase != "loading":
            return
        self.query_one("#replay-progress-label", Label).update(
            Content.assemble(one_line(message.label), (f"  {message.fraction * 100:.0f}%", "dim")))
        self.query_one("#replay-progress", ProgressBar).update(progress=message.fraction * 100)

    async def on_replay_screen_loaded(self, message: Loaded) -> None:
        result = self.result = message.report
        self.phase = "loaded"
        self.query_one("#replay-loading").display = False
        self.query_one("#replay-body").display = True
        self._render_header()
        tabs = self.query_one("#replay-tabs", Tabs)
        for i, s in enumerate(result.sessions):
            # A str label is markup to a Tab: the session's label (a log's name) goes in as Content.
            await tabs.add_tab(Tab(Content(f"{i + 1} {one_line(session_label(s))}"), id=f"session-{i}"))
        tabs.display = len(result.sessions) > 1
        if result.sessions:
            self.show_session(0)
        else:
            self.query_one("#replay-session", Static).update(
                Content.styled("The replay holds no sessions: no request was found in the logs given.", "$warning"))
            self.query_one("#replay-scroll").display = False
        self.done.set()

    def on_replay_screen_failed(self, message: Failed) -> None:
        self._fail(message.error)

    def _fail(self, error: BaseException) -> None:
        self.phase = "error"
        self.error = describe_failure(error)
        what, todo = self.error
        self.query_one("#replay-loading").display = False
        self.query_one("#replay-body").display = False
        box = self.query_one("#replay-error", Static)
        box.update(Content.assemble(("✗ ", "bold $error"), (visible(what), "bold"), "\n\n", visible(todo), "\n\n",
                                    ("q quits (exit code 1).", "dim")))
        box.display = True
        self.query_one(ReplayHeader).update(Content.assemble(("ctxtui replay · ", "bold"), ("failed", "bold $error")))
        self.done.set()

    # ----- showing one session ---------------------------------------------------------------------
    @property
    def session(self) -> SessionResult | None:
        if self.result is None or not self.result.sessions:
            return None
        return self.result.sessions[self.index]

    def show_session(self, index: int) -> None:
        """Draw session `index` into the plots, the table and the notes."""
        result = self.result
        if result is None or not result.sessions:
            return
        self.index = index % len(result.sessions)
        s = result.sessions[self.index]
        tabs = self.query_one("#replay-tabs", Tabs)
        if tabs.active != f"session-{self.index}":
            tabs.active = f"session-{self.index}"
        order = result.policy_names
        context_plot = self.query_one(ReplayContextPlot)
        context_plot.show(s, s.window or result.window, order)
        self.query_one(ReplayCostPlot).show(s, order)
        self.query_one(PolicyTable).show(s)
        sep = ("  ·  ", "dim")
        line: list = []                  # one line, cut at the end when narrow: the path goes last
        if s.agent_id:
            line += [("sub-agent ", "dim"), (one_line(s.agent_id), "bold"), sep]
        line += [("model ", "dim"), one_line(s.model or "—"), sep, f"{fmt.tokens(s.requests)} requests", sep]
        if s.window and s.window != result.window:
            line += [("window ", "dim"), fmt.tokens(s.window), sep]
        if s.skipped_lines:
            line += [(f"⚠ {s.skipped_lines:,} unreadable line{'' if s.skipped_lines == 1 else 's'} skipped",
                      "bold $warning"), sep]
        line.append(fmt.path(s.path))
        self.query_one("#replay-session", Static).update(Content.assemble(*line))
        recorded = recorded_text(s)
        notes: list = [*((visible(recorded), "\n") if recorded else ()), visible(validation_text(s))]
        if s.cache_doctor:     # each request that read short of the cache: where its prefix changed, and why
            notes += ["\n", ("cache doctor\n", "bold"),
                      *[f"{visible(line)}\n" for line in doctor_lines(s.cache_doctor, prefix="• ")]]
        if context_plot.glyphs:
            notes += ["\n", ("compactions on the plot: ", "dim"),
                      "  ".join(f"{g} {one_line(str(layer))}" for layer, g in context_plot.glyphs.items())]
        if result.limits:
            notes += ["\n\n", ("limits\n", "bold"), *[(f"• {visible(str(line))}\n", "dim") for line in result.limits]]
        self.query_one("#replay-notes", Static).update(Content.assemble(*notes))

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        tab_id = event.tab.id or ""
        if tab_id.startswith("session-"):
            index = int(tab_id.removeprefix("session-"))
            if self.phase == "loaded" and index != self.index:    # not the echo of show_session's own change
                self.show_session(index)

    def action_next_session(self) -> None:
        if self.phase == "loaded":
            self.show_session(self.index + 1)

    def action_previous_session(self) -> None:
        if self.phase == "loaded":
            self.show_session(self.index - 1)

    def action_toggle_help(self) -> None:
        help_box = self.query_one("#replay-help")
        help_box.display = not help_box.display

    def action_hide_help(self) -> None:
        self.query_one("#replay-help").display = False

    def action_quit(self) -> None:
        self.app.exit(1 if self.phase == "error" else 0)

    def _render_header(self) -> None:
        r = self.result
        if r is None:
            return
        sep = ("  ·  ", "dim")
        n = len(r.sessions)
        line1: list = [("ctxtui replay", "bold"), sep, f"{n} session{'' if n == 1 else 's'}"]
        if r.window:
            line1 += [sep, ("window ", "dim"), fmt.tokens(r.window)]
        if r.ttl:
            line1 += [sep, ("cache TTL ", "dim"), one_line(str(r.ttl))]
        line2: list = [("totals ", "dim")]
        for i, (name, text) in enumerate(totals_parts(r)):
            if i:
                line2.append(sep)
            line2 += [(one_line(name), "bold $accent"), " ", one_line(text)]
        self.query_one(ReplayHeader).update(Content.assemble(*line1, "\n", *line2))
