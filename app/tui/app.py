"""The Textual app. The agent loop runs in a worker; each event it yields is handed to the widget
that shows it (attributes down: panes get the event, the conversation gets a method call). The
app owns no accounting: numbers come from the loop's events and the agent's own state. It holds
the agent as an `AgentHandle` (app/tui/agent_port.py): the members it uses, nothing else. The app
owns its own state (whether a turn runs: `busy`) and hands it down to the widgets that show it.

Slash commands, the command palette and key bindings all end in the same `run_slash`.
"""
from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.css.query import NoMatches
from textual.widget import MountError, Widget
from textual.widgets import TextArea

from app.stylesheets import stylesheets
from compaction.clock import now as clock_now
from compaction.estimate import estimate_text
from compaction.next_request import NextRequest

from agent_core import events as ev
from agent_core.mcp.status_text import servers_text
from app.tui.screens.rewind import RewindScreen
from agent_core.context_budget import threshold_pct, threshold_words
from agent_core.context_items import head_items, largest_items, with_head
from agent_core.loop.compaction_preview import PreviewError
from agent_core.loop.shell_input import is_shell, shell_command
from agent_core.providers.model_choices import choices as model_choices
from agent_core.waiting import PauseError
from agent_core.waiting import describe as describe_pause
from agent_core.pricing.tally import burn_rate
from agent_core.security.visible_text import visible

from app.tui import commands, heap, sandbox_command
from app.tui.agent_port import AgentHandle
from app.tui.event_feed import NOT_YET, EventFeed
from app.tui.stop_signals import StopSignals
from app.tui.screens.context_screen import ContextScreen
from app.tui.screens.diff_view import DiffScreen
from app.tui.screens.help import HelpScreen
from app.tui.screens.inspector import InspectorScreen
from app.tui.screens.model_picker import ModelPicker
from app.preview_text import headline
from app.tui.screens.permission import PermissionScreen
from app.tui.screens.resume import ResumeScreen
from app.tui.screens.sandbox_screen import SandboxScreen
from app.tui.screens.transcript_browser import TranscriptBrowser
from app.widgets.context_pane import ContextPane, history_points
from app.widgets import next_request as next_text
from app.tui.widgets.conversation import answer_record
from app.tui.widgets.conversation.compaction_marker import MarkerRecord
from app.tui.widgets.conversation.container import Conversation
from app.tui.widgets.conversation.notice_message import NoticeRecord
from app.tui.widgets.conversation.shell_block import ShellRecord
from app.widgets.cost_pane import CostPane
from app.tui.widgets.footer import AppFooter
from app.tui.widgets.mention_picker import MentionPicker
from app.tui.widgets.prompt import PromptInput
from app.tui.widgets.side_panes import SidePanes
from app.tui.widgets.status import StatusBar
from app.widgets.timeline import Timeline

FILE_TOOLS = frozenset({"write_file", "edit_file"})   # what the file history sees (agent_core/tools/file_history.py)
CSS_FILES = ("app.tcss", "conversation.tcss", "prompt.tcss", "panes.tcss", "permission.tcss",
             "context_screen.tcss", "transcripts.tcss", "help.tcss", "inspector.tcss", "model_picker.tcss",
             "rewind.tcss", "diff.tcss")

# Loop events that come within this long of the first of a batch are shown in one frame: a demo
# turn's events (or a real model's tool calls and figures) in 3 frames instead of 5, and what
# comes later is still on screen within 1/20 s (streamed text is drawn at most every 0.1 s anyway).
BATCH_S = 1 / 20
# An Esc pressed before a closed screen or maximized pane was drawn away, or this soon after, does not
# cancel the turn: it is the close pressed twice, not a wish to stop.
ESC_AFTER_CLOSE_S = 1.0
PANES_INTERVAL_S = 0.25   # the side panes and the status line take new figures at most this often

# Signals that end the app like Ctrl+Q (SIGHUP: the terminal was closed). Exit code 128+N.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

DEMO_BANNER = "Demo model, offline: nothing leaves this machine. /model NAME switches to a Claude model."
DEMO_TIP = ("Tour: the README lists a dozen prompts that show each compaction layer; /wait lets time pass "
            "on the demo's clock, as a pause would, so the prompt cache goes cold.")
SWITCHED_BANNER = ("Demo model, offline (switched with /model demo): nothing leaves this machine. /model NAME "
                   "switches back to a Claude model.")

# Builds a replacement agent for /model and /resume: keyword overrides of the CLI config
# (model=..., resume=...). Provided by app.tui.launch; None disables those commands.
AgentFactory = Callable[..., AgentHandle | Awaitable[AgentHandle]]
W = TypeVar("W", bound=Widget)


class CtxApp(App[int]):
    """ctxtui's screen. `agent` is what the TUI uses of the Agent (agent_port.AgentHandle)."""

    TITLE = "ctxtui"
    CSS_PATH = stylesheets(*CSS_FILES)
    COMMANDS = App.COMMANDS | {commands.SlashCommandProvider}
    BINDINGS = [
        Binding("escape", "cancel_turn", "Cancel turn", id="app.cancel"),
        Binding("ctrl+o", "slash('/context')", "Context", id="app.context"),
        Binding("ctrl+t", "slash('/transcripts')", "Transcripts", id="app.transcripts"),
        Binding("f1", "slash('/help')", "Help", id="app.help"),
        Binding("f2,ctrl+b", "toggle_sidebar", "Panes", id="app.sidebar"),
        Binding("alt+up", "nudge_threshold(1)", "Threshold +1%", id="app.threshold_up", show=False),
        Binding("alt+down", "nudge_threshold(-1)", "Threshold -1%", id="app.threshold_down", show=False),
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
    ]

    # Width and height classes on the screen (styles/app.tcss, panes.tcss): under 120 columns the
    # conversation would get less than 70 beside the sidebar, which collapses there.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-medium"), (160, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-medium-height"), (50, "-tall")]

    # A turn (or /compact) runs in the agent worker: set by `_drive`, shown by the status bar.
    busy: reactive[bool] = reactive(False, init=False, repaint=False)   # a repaint would redraw the screen

    def __init__(self, agent: AgentHandle, *, sessions_root: Path | None = None, claude_root: Path | None = None,
                 agent_factory: AgentFactory | None = None, clock: Callable[[], float] = clock_now,
                 theme: str | None = None, keymap: dict[str, str] | None = None,
                 notices: tuple[str, ...] = (), banner: str | None = None, settle_heap: bool = False,
                 lazy_side: bool = False, long_context: bool = False,
                 files: tuple[Path, tuple[Path, ...]] | None = None) -> None:
        super().__init__()
        # The @-mention picker's workspace and the folders it never lists (ctxtui's state); None: no picker
        self.mention_files = files
        self.long_context = long_context   # the 1M context is on where it is opt-in: the /model picker's windows
        # The `ctxtui` command's app settles the collector after its first frame (heap.py); tests
        # leave it alone, as many apps run in one process.
        self.settle_heap = settle_heap
        # The `ctxtui` command's app mounts the side column after its first frame (side_panes.py);
        # tests mount it with the rest, so a pane is there once the app runs.
        self.lazy_side = lazy_side
        self._settled: heap.Settled | None = None
        self.banner = banner or DEMO_BANNER   # said when the model is the offline demo: how it came to be
        self.agent: AgentHandle = agent
        self.notices = tuple(n for n in notices if n)   # said once, at start (e.g. ignored .env settings)
        self.sessions_root = sessions_root
        self.claude_root = claude_root
        self.agent_factory = agent_factory
        self.clock = clock
        self.theme_name = theme
        self._user_keymap = dict(keymap or {})
        self._started_at: float | None = None
        self._streamed = False                         # answer text shown since the model call began
        self._waiting: NoticeRecord | None = None     # the "Waiting for the API" line, updated in place
        self._shell: ShellRecord | None = None        # the `!command` running, until its output lands
        self._focus_before_max: Widget | None = None
        # when the screen last came back from a modal or a maximized pane, drawn (monotonic; inf: not drawn yet)
        self._restored_at = float("-inf")
        self._cancel_pressed_at: float | None = None   # when the cancel key being handled was pressed
        self._signals = StopSignals(self._stop_signal)
        self._widgets: dict[type, Widget] = {}         # the main screen's panes, found once (see _pane)
        # The latest context and cost figures not yet shown: the panes are set once per frame.
        self._pending_context: ev.ContextUpdate | None = None
        self._pending_cost: ev.CostUpdate | None = None
        self._panes_scheduled = False
        self._panes_shown_at = 0.0      # when the panes last got figures (time.monotonic)
        self._history_points: list[tuple[int, int, bool]] = []   # context_history as the plot's tuples
        self._history_seen: tuple[int, Any] = (0, None)          # (entries converted, the list converted)
        # Until the side column is mounted (a frame after the rest): what is for it waits here.
        self._side_ready = False
        self._for_side: list[Callable[[], object]] = []
        self._shown_context: ev.ContextUpdate | None = None   # the latest figures handed down
        # The next request's price as the latest figure gave it, and the clock then: counted down
        # each second, with the prompt being typed added (`_push_next`).
        self._next_base: tuple[NextRequest, float] | None = None
        self._typed_tokens = 0
        self._next_shown: NextRequest | None = None
        self._shown_cost: ev.CostUpdate | None = None
        self._handlers: dict[type[ev.Event], Callable[[Any], Awaitable[None] | None]] = {
            ev.TextDelta: self._on_text,
            ev.ThinkingDelta: lambda e: self.conversation.append_thinking(e.text),
            ev.ToolCall: lambda e: self.conversation.add_tool_call(e.id, e.name, e.input),
            ev.ToolResult: self._on_tool_result,
            ev.AssistantDone: self._on_answer_done,
            ev.ContextUpdate: self._update_context,
            ev.CostUpdate: self._update_cost,
            ev.Compaction: self._on_compaction,
            ev.CompactionStarted: lambda e: self.conversation.start_compaction(e),
            ev.CompactionDelta: lambda e: self.conversation.append_compaction(e.text),
            ev.CompactionEnded: lambda e: self.conversation.end_compaction(e),
            ev.BreakerTripped: self._on_breaker,
            ev.Error: lambda e: self.conversation.add_error(e),
            ev.Notice: lambda e: self.conversation.add_notice(e.message),
            ev.FileMentioned: lambda e: self.conversation.add_mention(e.path, e.lines, e.total_lines),
            ev.CacheMiss: lambda e: self.conversation.add_notice(f"Cache: {e.text}."),
            ev.StreamRetry: self._on_stream_retry,
            ev.Waiting: self._on_waiting,
            ev.PermissionRequest: self._on_permission,
            ev.TurnFinished: self._on_turn_finished,
            ev.ShellRan: self._on_shell,
            ev.TurnStarted: lambda e: None,   # the prompt is already shown (run_prompt); _drive marks the app busy
        }

    # ----- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Conversation(id="conversation")
                if self.mention_files is not None:
                    yield MentionPicker(self.mention_files[0], protected=self.mention_files[1], id="mention-picker")
                yield PromptInput(id="prompt")
            if not self.lazy_side:
                yield SidePanes(clock=self.clock, id="side")
        yield StatusBar(id="status")
        yield AppFooter()

    def _pane(self, kind: type[W]) -> W:
        """The main screen's widget of this type, found once and held: a query walks the DOM, and
        the conversation is thousands of widgets before the panes (the handlers run per event).
        Raises NoMatches once the app is closing and the widgets are gone, as the query did."""
        w = self._widgets.get(kind)
        if w is None or not w.is_attached:
            root = self.screen_stack[0] if self.screen_stack else self
            w = self._widgets[kind] = root.query_one(kind)
        return w  # type: ignore[return-value]

    @property
    def conversation(self) -> Conversation:
        return self._pane(Conversation)

    @property
    def prompt_input(self) -> PromptInput:
        return self._pane(PromptInput)

    @property
    def context_pane(self) -> ContextPane:
        return self._pane(ContextPane)

    @property
    def cost_pane(self) -> CostPane:
        return self._pane(CostPane)

    @property
    def timeline(self) -> Timeline:
        return self._pane(Timeline)

    @property
    def status(self) -> StatusBar:
        return self._pane(StatusBar)

    def watch_busy(self, busy: bool) -> None:
        try:
            self.status.busy = busy
        except NoMatches:  # the app is closing and the widgets are gone
            return
        self.refresh_bindings()

    async def on_mount(self) -> None:
        self._catch_stop_signals()
        if self.theme_name:
            self.theme = self.theme_name
        if self._user_keymap:
            self.set_keymap(self._user_keymap)
        await self._show_agent(resumed=bool(self.agent.entries))
        self.prompt_input.focus()
        self.watch(self.screen, "maximized", self._maximized_changed, init=False)
        self.screen_change_signal.subscribe(self, self._screen_changed)
        self.set_interval(1.0, self._push_next, name="next request")
        if self.lazy_side:
            self.call_after_refresh(self._mount_side)
        self.call_after_refresh(self._after_first_frame)

    async def _mount_side(self) -> None:
        """The side column, after the first frame (side_panes.py); not when the app is closing."""
        try:
            row = self.screen_stack[0].query_one("#main")
            if self.is_running and row.is_attached:
                await row.mount(SidePanes(clock=self.clock, id="side"))
        except (IndexError, NoMatches, MountError):   # closing: the screen or the row is gone
            return

    def _after_first_frame(self) -> None:
        """What start-up left for later: the answer renderer, then (the command's app) the heap
        settled, so the renderer's objects are frozen with the rest of start-up's."""
        if not self.is_running:
            return
        answer_record.preload()
        if self.settle_heap and self._settled is None:
            self._settled = heap.settle()

    def _maximized_changed(self, maximized: Widget | None) -> None:
        """Maximizing a pane (/cost) hides the prompt and Textual moves the focus to the next
        visible widget; when the pane is restored the prompt gets it back, or typing goes nowhere
        (unless the user had focused something else before)."""
        if maximized is not None:
            self._focus_before_max = self.screen.focused
            # Textual gave the focus to the hidden conversation: typing went nowhere and Enter
            # opened a tool block nobody saw. Nothing has it while the pane fills the screen.
            self.screen.set_focus(None)
            return
        self._restored()
        if self._focus_before_max in (None, self.prompt_input):
            self.prompt_input.focus()

    def _screen_changed(self, screen) -> None:
        """A modal closed (the main screen is back): an Esc pressed on it must not cancel the turn."""
        if screen is self.screen_stack[0]:
            self._restored()

    def _restored(self) -> None:
        """The main screen is back: Escs pressed until it is drawn, and for ESC_AFTER_CLOSE_S after,
        closed what was in front of it (on a loaded machine the redraw takes seconds)."""
        self._restored_at = float("inf")

        def drawn() -> None:
            self._restored_at = time.monotonic()
        self.call_after_refresh(drawn)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and any(
                b.action == "cancel_turn" for b in self._bindings.key_to_bindings.get(event.key, ())):
            self._cancel_pressed_at = event.time     # when it was pressed, not when the loop got to it
        await super().on_event(event)

    async def on_unmount(self) -> None:
        if self._settled is not None:
            self._settled.restore()
            self._settled = None
        self._signals.release()
        try:
            await self.agent.aclose()
        except Exception:  # closing must not hide the real exit
            pass

    def _catch_stop_signals(self) -> None:
        """Without this SIGTERM or SIGHUP kill the process mid-turn: the session is left with a
        tool call and no result, and the bash tool's processes run on. (Not loop.add_signal_handler,
        which loses a signal when input floods the loop: stop_signals.py.)"""
        self._signals.catch(STOP_SIGNALS)

    def _stop_signal(self, sig: int) -> None:
        """Cancel the running turn (history repaired, tools killed) and exit; closing the agent on
        unmount waits for the cancel and closes the session."""
        self.agent.cancel()
        self.exit(128 + sig, return_code=128 + sig)

    # ----- agent state → panes -------------------------------------------------------------------
    async def _show_agent(self, resumed: bool) -> None:
        """Render the agent's current state: status line, conversation (on resume), panes, timeline."""
        a = self.agent
        a.on_context = self._update_context   # a figure confirmed by count_tokens while no turn runs
        info = a.info
        self.status.model = info.model
        self.status.offline = info.offline
        self.status.session_id = a.session_id
        self.status.sandbox = sandbox_command.status_words(a.sandbox)
        conv = self.conversation
        await conv.clear()
        self._to_side(lambda: self.timeline.reset())
        if self.status.offline:
            await conv.add_notice(f"{self.banner}\n{DEMO_TIP}")
        for notice in self.notices:
            await conv.add_notice(notice)
        if resumed:
            await conv.load_entries(a.entries)
            await conv.add_notice(f"Resumed session {a.session_id}: {len(a.entries):,} entries.")
            for line in a.load_warnings():
                await conv.add_notice(f"Session log: {line}")
            for c in a.compactions:
                self._to_side(lambda c=c: self.timeline.add_compaction(c, resumed=True))
        self._update_context(a.context_event())
        self._update_cost(a.cost_event())
        self._flush_panes()
        self.refresh_changes()
        self.start_mcp(a)

    @work(group="mcp")
    async def start_mcp(self, agent: AgentHandle) -> None:
        """The session's MCP servers, started beside the first frame: each one's tools or why not,
        said in the conversation, and the context pane's MCP category once they are offered."""
        notices = await agent.start_mcp()
        if agent is not self.agent:
            return               # switched meanwhile: the new agent says its own
        for notice in notices:
            await self.conversation.add_notice(notice)
        if notices and not self.busy:
            self._update_context(agent.context_event())

    def _to_side(self, action: Callable[[], object]) -> None:
        """Run `action` on the side column now, or once it is mounted (in the order given)."""
        if self._side_ready:
            action()
        else:
            self._for_side.append(action)

    def on_side_panes_ready(self, message: SidePanes.Ready) -> None:
        """The side column is there: it gets the figures shown so far and what waited for it."""
        message.stop()
        self._side_ready = True
        waiting, self._for_side = self._for_side, []
        for action in waiting:
            action()
        self._pending_context = self._pending_context or self._shown_context
        self._pending_cost = self._pending_cost or self._shown_cost
        self._next_shown = None
        self._flush_panes()
        self._push_next()

    def _update_context(self, c: ev.ContextUpdate) -> None:
        """A context figure: shown on the next frame (a model call sends several in a burst)."""
        self._pending_context = c
        self._schedule_panes()

    def _update_cost(self, c: ev.CostUpdate) -> None:
        self._pending_cost = c
        self._schedule_panes()

    def _schedule_panes(self) -> None:
        """Show the latest figures on the next frame, or, when the panes were drawn less than
        `PANES_INTERVAL_S` ago, when that interval ends: a model call sends a burst of figures
        and a turn several model calls, and each showing redraws the side panes (a fifth of a
        TUI turn's CPU when shown per frame); four times a second is as fast as anyone reads them."""
        if self._panes_scheduled:
            return
        self._panes_scheduled = True
        wait = self._panes_shown_at + PANES_INTERVAL_S - time.monotonic()
        if wait > 0:
            self.set_timer(wait, self._flush_panes, name="show figures")
        else:
            self.call_after_refresh(self._flush_panes)

    def _flush_panes(self) -> None:
        """Hand the latest context and cost figures down to the panes and the status line: once
        per frame however many updates came since (each pane renders, and may lay out, per set)."""
        self._panes_scheduled = False
        self._panes_shown_at = time.monotonic()
        c, self._pending_context = self._pending_context, None
        k, self._pending_cost = self._pending_cost, None
        if c is not None:
            self._shown_context = c
        if k is not None:
            self._shown_cost = k
        try:
            if c is not None:
                self.status.state = c.state
                self.status.context = c
                base = next_text.from_event(c.next_request)
                self._next_base = None if base is None else (base, self.clock())
                self._push_next()
            if k is not None:
                self.status.cost_usd = k.total_usd
            if not self._side_ready:    # on_side_panes_ready hands them down
                return
            if c is not None:
                pane = self.context_pane
                pane.history = self._context_points()
                pane.compactions = len(self.agent.compactions)
                pane.context = c
            if k is not None:
                pane = self.cost_pane
                pane.extras = self._cost_extras(k)
                pane.cost = k
        except NoMatches:   # the app is closing and the widgets are gone
            pass

    def _push_next(self) -> None:
        """The next request's price as of now, with the prompt being typed: handed down when it
        changed (the cache's time left ticks once a second while it is warm)."""
        if self._next_base is None:
            nr = None
        else:
            base, at = self._next_base
            nr = base.later(self.clock() - at).typed(self._typed_tokens)
        if nr == self._next_shown:
            return
        self._next_shown = nr
        try:
            self.status.next_request = nr
            if self._side_ready:
                self.context_pane.next_request = nr
        except NoMatches:   # the app is closing and the widgets are gone
            pass

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        """The prompt being typed goes into the next request's price (a /command is not sent)."""
        try:
            if event.text_area is not self.prompt_input:
                return
        except NoMatches:
            return
        text = event.text_area.text
        typed = 0 if text.lstrip().startswith("/") or not text.strip() else estimate_text(text)
        if typed != self._typed_tokens:
            self._typed_tokens = typed
            self._push_next()

    def _context_points(self) -> tuple[tuple[int, int, bool], ...]:
        """The agent's `context_history` as the plot's tuples, converting only the entries added
        since the last call (the history grows by a few entries a turn, for the whole session)."""
        history = self.agent.context_history
        seen, source = self._history_seen
        if (source is not history or seen > len(history)     # a new agent or a cleared history
                or (seen and history_points(history[seen - 1:seen])[0] != self._history_points[seen - 1])):
            self._history_points, seen = [], 0
        self._history_points.extend(history_points(history[seen:]))
        self._history_seen = (len(history), history)
        return tuple(self._history_points)

    def _cost_extras(self, c: ev.CostUpdate) -> dict[str, Any]:
        """The burn rate (the event carries every other figure): dollars over the session's active
        time when the agent keeps it (a resumed session shows what it showed), else over this run."""
        out: dict[str, Any] = {}
        if c.total_usd is not None and c.by_model:
            active = self.agent.active_seconds()
            if active is not None:
                burn = burn_rate(c.total_usd, 0.0, active)
            else:
                now = self.clock()
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
        api = self.agent.api_seconds()
        if api is not None:
            out["api_s"] = float(api)
        started = self.agent.started_at()
        if started is not None:
            out["wall_s"] = max(0.0, self.clock() - started)
        return out

    # ----- the loop, in a worker ---------------------------------------------------------------
    async def handle_event(self, e: ev.Event) -> None:
        """One loop event → the widget that shows it: the handler of its type, or of the nearest
        type it derives from (a Waiting is shown as the Notice it is). Other events are not shown."""
        handler = ev.handler_for(self._handlers, e)
        if not isinstance(e, ev.Waiting):
            self._waiting = None    # the next wait gets a line of its own, below what came since
        shown = handler(e) if handler is not None else None
        if shown is not None:
            await shown

    async def _on_compaction(self, e: ev.Compaction) -> None:
        await self.conversation.add_compaction(e)
        at = self.clock()
        self._to_side(lambda: self.timeline.add_compaction(e, at))

    async def _on_breaker(self, e: ev.BreakerTripped) -> None:
        at = self.clock()
        self._to_side(lambda: self.timeline.add_breaker(e, at))
        await self.conversation.add_notice(f"Auto-compaction stopped by the {e.breaker} breaker: {e.reason}")

    async def _on_text(self, e: ev.TextDelta) -> None:
        self._streamed = True
        await self.conversation.append_text(e.text)

    async def _on_answer_done(self, e: ev.AssistantDone) -> None:
        self._streamed = False
        await self.conversation.end_text()

    async def _on_waiting(self, e: ev.Waiting) -> None:
        """One line per wait, updated as the seconds pass (not a new line every few seconds)."""
        if self._waiting is not None and self.conversation.holds(self._waiting):
            self.conversation.set_notice(self._waiting, e.message)
            return
        self._waiting = await self.conversation.add_notice(e.message)

    async def _on_stream_retry(self, e: ev.StreamRetry) -> None:
        await self.conversation.end_text()
        partial = " The partial answer above is discarded." if self._streamed else ""
        self._streamed = False
        await self.conversation.add_notice(f"{e.message}.{partial} Sending it again ({e.attempt} of {e.of}).")

    async def _on_turn_finished(self, e: ev.TurnFinished) -> None:
        await self.conversation.end_text()
        if e.stop_reason == "cancelled":
            self.conversation.cancel_running_tools()    # still running when the turn was cancelled
            await self.conversation.add_notice("Turn cancelled. What was done so far is kept; send the next prompt.")

    @on(Conversation.MarkerSelected)
    def _marker_selected(self, event: Conversation.MarkerSelected) -> None:
        event.stop()
        self.inspect(event.marker.event or self._logged_compaction(event.marker))

    @on(Timeline.CompactionSelected)
    def _timeline_selected(self, event: Timeline.CompactionSelected) -> None:
        event.stop()
        self.inspect(event.compaction)

    def _logged_compaction(self, m: MarkerRecord) -> ev.Compaction:
        """A resumed boundary's compaction: the logged event with the same figures, when there is one."""
        for c in reversed(self.agent.compactions):
            if (c.layer, c.tokens_before, c.tokens_after) == (m.layer, m.before, m.after):
                return c
        return ev.Compaction(layer=m.layer, trigger=m.trigger, tokens_before=m.before,
                             tokens_after=m.after, transcript_path=m.transcript_path, action=m.action)

    def inspect(self, c: ev.Compaction) -> None:
        """Open the compaction inspector; the summary call is priced with the session's rates."""
        agent, model = self.agent, self.agent.info.model

        def price(usage: dict) -> float | None:
            return agent.price(model, usage)

        self.push_screen(InspectorScreen(c, price))

    def _on_permission(self, request: ev.PermissionRequest) -> None:
        """The modal answers on the request (allow / always / deny), which the loop awaits. A turn
        cancelled while asking cancels the request, and the modal closes with it."""
        screen = PermissionScreen(request)

        def closed(answer: str | None) -> None:
            request.answer(answer or "deny")

        def abandoned(reply: asyncio.Future) -> None:
            if reply.cancelled() and self.screen is screen:
                screen.dismiss("deny")

        self.push_screen(screen, callback=closed)
        request.reply.add_done_callback(abandoned)

    async def _drive(self, stream: AsyncIterator[ev.Event]) -> None:
        """Show the loop's events as they come. Events that come together (a model call's deltas,
        figures and tool calls arrive in bursts) are handled in one `batch_update`: the screen is
        laid out and drawn once for them, not once per event. A batch ends `BATCH_S` after its first
        event, or sooner when the loop sends nothing more in that time (it waits for the model or
        a tool), so a long burst still shows 20 times a second."""
        self.busy = True
        self._streamed = False
        feed = EventFeed(stream)
        try:
            e = await feed.next()
            while e is not None:
                with self.batch_update():
                    started = time.monotonic()
                    while isinstance(e, ev.Event):
                        await self.handle_event(e)
                        left = started + BATCH_S - time.monotonic()
                        # the next event in this batch if it comes soon; the batch's time is up: the next
                        e = await feed.next(timeout=left) if left > 0 else NOT_YET
                if e is NOT_YET:
                    e = await feed.next()
        finally:
            feed.close()
            try:
                self.busy = False
                await self.conversation.end_text()
                if self._panes_scheduled:
                    self._flush_panes()     # the turn's final figures now, not after the interval
            except NoMatches:  # the app is closing and the widgets are gone
                pass

    @work(group="agent")
    async def run_prompt(self, text: str) -> None:
        await self.conversation.add_user(text)
        await self._drive(self.agent.run(text))

    @work(group="agent")
    async def run_shell(self, command: str) -> None:
        """`!command` (shell mode): the user's own command in the workspace, no permission asked
        (they typed it); its output is shown and becomes their message in the context, no model
        called. Esc cancels it (`action_cancel_turn`), as it does a turn."""
        self._shell = await self.conversation.add_shell(command)
        await self._drive(self.agent.shell(command))

    def _on_tool_result(self, e: ev.ToolResult) -> None:
        self.conversation.set_tool_result(e.id, e.preview, e.size, e.is_error)
        if e.name in FILE_TOOLS and not e.is_error:
            self.refresh_changes()

    @work(group="changes", exclusive=True)
    async def refresh_changes(self) -> None:
        """The cost pane's changed files, measured off the event loop (a diff of a big file)."""
        changed = self.agent.changed_files()
        if changed is None:
            return
        files = tuple(await asyncio.to_thread(changed.files))
        self._to_side(lambda: setattr(self.cost_pane, "changes", files))

    def _on_shell(self, e: ev.ShellRan) -> None:
        record, self._shell = self._shell, None
        if record is not None:
            self.conversation.set_shell(record, None if e.cancelled else e.output, e.is_error)

    @work(group="agent")
    async def run_compact(self, focus: str | None) -> None:
        await self._drive(self.agent.compact(focus or None))

    # ----- input ----------------------------------------------------------------------------------
    @on(PromptInput.Submitted)
    def _submitted(self, event: PromptInput.Submitted) -> None:
        text = event.text
        if commands.is_command(text):
            self.run_slash(text)
            return
        if self.busy:
            self.notify("A turn is running: press Esc to cancel it, or wait.", severity="warning")
            self.fill_prompt(text)
            return
        if is_shell(text):
            if shell_command(text):
                self.run_shell(shell_command(text))
            else:
                self.notify("Shell mode: type a command after the !, e.g. !git status.", severity="warning")
            return
        self.run_prompt(text)

    def fill_prompt(self, text: str) -> None:
        p = self.prompt_input
        p.load_text(text)
        p.move_cursor(p.document.end)
        p.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Esc shows as "Cancel turn" only while a turn runs (greyed out otherwise)."""
        if action == "cancel_turn" and self.is_mounted:
            return True if self.busy else None
        return True

    def action_cancel_turn(self) -> None:
        # An Esc pressed while a modal or the maximized pane was still on screen, or just after it
        # went, is the close pressed twice (the close can take a moment on a loaded machine), not
        # a request to stop the turn. Its press time counts, not when the loop got to it.
        pressed, self._cancel_pressed_at = self._cancel_pressed_at, None
        if pressed is None:
            pressed = time.monotonic()
        if self.busy and pressed - self._restored_at >= ESC_AFTER_CLOSE_S:
            self.agent.cancel()

    def action_toggle_sidebar(self) -> None:
        """Show or hide the side panes whatever the width (the width's choice is the default).
        Hiding them while one has focus gives the focus to the prompt: left to Textual it went to
        the conversation, so what was typed next was lost and Enter opened a tool block."""
        if not self._side_ready:    # pressed in the first frame
            self._to_side(self.action_toggle_sidebar)
            return
        main = self.screen_stack[0]
        if main.maximized is not None:     # /cost fills the screen: F2 puts it back, and the prompt gets the focus
            main.minimize()
        side = main.query_one("#side")
        shown = side.display
        focused = main.focused
        main.set_class(not shown, "-side-shown")
        main.set_class(shown, "-side-hidden")
        if shown and focused is not None and side in focused.ancestors_with_self:
            self.prompt_input.focus()

    def action_slash(self, text: str) -> None:
        self.run_slash(text)

    def run_slash(self, text: str) -> None:
        try:
            cmd = commands.parse(text)
        except commands.CommandError as e:
            self.notify(visible(str(e)), severity="error", markup=False)
            return
        handler = getattr(self, f"_cmd_{cmd.name}")
        handler(cmd.arg)

    def _cmd_compact(self, arg: str) -> None:
        flag, _, focus = arg.partition(" ")
        if flag == "--preview":
            self.preview_compact(focus.strip() or None)
        else:
            self.run_compact(arg or None)

    @work(group="preview", exclusive=True)
    async def preview_compact(self, focus: str | None) -> None:
        """`/compact --preview [focus]`: what a compaction now would do, in the inspector's layout;
        `a` there runs it. Nothing changes until then."""
        if self.busy:
            self.notify("A turn is running: preview the compaction once it ends.", severity="warning")
            return
        try:
            preview = await self.agent.preview_compact(focus)
        except PreviewError as e:
            self.notify(visible(str(e)), severity="warning", markup=False)
            return
        if preview.compaction is None:
            await self.conversation.add_notice(headline(preview))
            return
        agent, model = self.agent, self.agent.info.model

        def closed(apply: bool | None) -> None:
            if apply and not self.busy:
                self.run_compact(focus)
            elif apply:
                self.notify("A turn is running: run /compact once it ends.", severity="warning")

        self.push_screen(InspectorScreen(preview.compaction, lambda u: agent.price(model, u), preview),
                         callback=closed)

    def _cmd_context(self, arg: str) -> None:
        if not self._side_ready:    # the figures are the pane's
            self._to_side(lambda: self._cmd_context(arg))
            return
        pane = self.context_pane
        agent = self.agent
        memory = getattr(agent, "memory", None)
        items = with_head(largest_items(agent.view()), head_items(memory.files if memory else (), agent.mcp_tokens))
        sandbox = agent.sandbox.status() if agent.sandbox is not None else None
        self.push_screen(ContextScreen(pane.context, tuple(pane.history), items, sandbox=sandbox))

    def _cmd_rewind(self, arg: str) -> None:
        if self.busy:
            self.notify("A turn is running: press Esc first, then /rewind.", severity="warning")
            return

        def chosen(index: int | None) -> None:
            if index is None:
                return
            plan = self.agent.file_plan(index)
            if not plan:
                self.rewind_to(index)
                return
            diff = "".join(r.diff for r in plan if not r.problem)
            skipped = [f"{r.copy.shown} ({r.problem})" for r in plan if r.problem]
            about = (f"The agent changed {len(plan)} file{'s' if len(plan) != 1 else ''} since this prompt. "
                     "Restoring puts each back as it was just before it (a file it created is removed); the "
                     "bash tool's changes are not known and stay." + (
                         " Cannot be restored: " + ", ".join(skipped) + "." if skipped else ""))

            def answered(answer: str | None) -> None:
                if answer is not None:      # "files" or "conversation"; Esc: nothing happens
                    self.rewind_to(index, plan if answer == "files" else None)
            self.push_screen(DiffScreen("Rewind: restore files?", about, diff, ask_restore=True), callback=answered)
        self.push_screen(RewindScreen(self.agent.rewind_points()), callback=chosen)

    @work(group="agent", exclusive=True)
    async def rewind_to(self, index: int, plan: list | None = None) -> None:
        """Cut the conversation to just before the chosen prompt and put that prompt in the input;
        with a plan (the user saw its diff and said so), put the files back too."""
        try:
            text = self.agent.rewind(index)
            restored = self.agent.restore_files(plan) if plan else []
        except ValueError as e:
            self.notify(visible(str(e)), severity="error", markup=False)
            return
        conv = self.conversation
        await conv.clear()
        await conv.load_entries(self.agent.entries)
        await conv.add_notice("Rewound: the conversation is as it was before this prompt, which is back in the "
                              "input to edit or send. The session log keeps what was after it.")
        if restored:
            await conv.add_notice("Files: " + "; ".join(restored))
            self.refresh_changes()
        self._update_context(self.agent.context_event())
        self.fill_prompt(text)

    def _cmd_diff(self, arg: str) -> None:
        self.show_diff()

    @work(group="diff")
    async def show_diff(self) -> None:
        """/diff: the files read and compared off the event loop (a session may have changed many)."""
        agent = self.agent
        changed = agent.changed_files()
        diff, files = await asyncio.to_thread(lambda: (agent.session_diff(), changed.files() if changed else []))
        n = len(files)
        about = (f"{n} file{'s' if n != 1 else ''} the agent's write and edit calls changed in this session, from "
                 "before the session to now (the bash tool's changes are not tracked)." if n else
                 "The agent's write and edit calls have changed no file in this session.")
        self.push_screen(DiffScreen("Session changes", about, diff))

    def _cmd_mcp(self, arg: str) -> None:
        agent = self.agent
        self.call_next(self.conversation.add_notice, servers_text(agent.mcp_status(), agent.mcp_tokens))

    def _cmd_sandbox(self, arg: str) -> None:
        sandbox = self.agent.sandbox
        if arg.strip():
            try:
                said = sandbox_command.apply(sandbox, arg)
            except ValueError as e:
                self.notify(visible(str(e)), severity="error", markup=False)
                return
            self._sandbox_changed(said)
        elif sandbox is None:
            self.notify("This session has no OS sandbox.", severity="warning")
        else:
            self.push_screen(SandboxScreen(sandbox.status()),
                             callback=lambda mode: mode and self._sandbox_changed(sandbox_command.apply(sandbox, mode)))

    def _sandbox_changed(self, said: str) -> None:
        self.status.sandbox = sandbox_command.status_words(self.agent.sandbox)
        self.call_next(self.conversation.add_notice, said)

    def _cmd_cost(self, arg: str) -> None:
        if not self._side_ready:
            self._to_side(lambda: self._cmd_cost(arg))
            return
        if self.screen.maximized is self.cost_pane:
            self.screen.minimize()
        else:
            self.screen.maximize(self.cost_pane, container=False)

    def _cmd_wait(self, arg: str) -> None:
        try:        # refused on a real model, during a turn and for a bad duration, with what to do
            pause = self.agent.let_time_pass(arg)
        except PauseError as e:
            self.notify(visible(str(e)), severity="error", markup=False)
            return
        self.call_next(self.conversation.add_notice, "⏱ " + describe_pause(pause))

    def _cmd_threshold(self, arg: str) -> None:
        budget = self.agent.budget
        if not arg.strip():
            self.call_next(self.conversation.add_notice, "Auto-compact " + threshold_words(budget) +
                           ". /threshold 70% or /threshold 120k moves it (Alt+Up / Alt+Down: 1% at a time), "
                           "/threshold default puts it back.")
            return
        try:
            pct = threshold_pct(arg, budget)
        except ValueError as e:
            self.notify(visible(str(e)), severity="error", markup=False)
            return
        self._move_threshold(pct)

    def action_nudge_threshold(self, step: int) -> None:
        budget = self.agent.budget
        now = budget.autocompact_pct if budget.autocompact_pct is not None else budget.pct_for(
            budget.autocompact_threshold)
        self._move_threshold(round(now + step, 1))

    def _move_threshold(self, pct: float | None) -> None:
        """Set the threshold, keep it for this model, say so, and redraw the figures with it."""
        try:
            budget = self.agent.set_threshold(pct)
        except ValueError as e:
            self.notify(visible(str(e)), severity="error", markup=False)
            return
        where = self.agent.keep_threshold(pct)
        self.call_next(self.conversation.add_notice, f"Auto-compact {threshold_words(budget)}, {visible(where)}.")
        self._update_context(self.agent.context_event())

    def _cmd_help(self, arg: str) -> None:
        self.push_screen(HelpScreen())

    def _cmd_transcripts(self, arg: str) -> None:
        self.push_screen(TranscriptBrowser(self.sessions_root, self.claude_root))

    def _cmd_clear(self, arg: str) -> None:
        """A new session on the same model: new id, new log, cost from zero (the old one can be
        resumed). Without a factory (an embedded agent) the context is emptied in place."""
        if self.busy:
            self.notify("A turn is running: press Esc first, then /clear.", severity="warning")
            return
        if self.agent_factory is not None:
            self.switch_agent("a new session", {"model": self.agent.info.model}, cleared=True)
            return
        self.agent.clear()
        self.call_next(self._after_clear)

    async def _after_clear(self) -> None:
        await self._show_agent(resumed=False)
        await self.conversation.add_notice("Context cleared. The session log still holds everything.")

    def _cmd_model(self, arg: str) -> None:
        if arg:
            self._switch(f"model {arg}", model=arg)
            return
        agent, current = self.agent, self.agent.info.model
        ttl = agent.cache_ttl
        context = agent.context_event()
        head = sum(context.categories.get(k, 0) for k in ("system", "memory", "tools", "mcp_tools"))
        picker = ModelPicker(model_choices(ttl=ttl, long_context=self.long_context, current=current), current,
                             context.tokens, ttl, head)

        def picked(model: str | None) -> None:
            if model:
                self._switch(f"model {model}", model=model)

        self.push_screen(picker, callback=picked)

    def _cmd_resume(self, arg: str) -> None:
        if arg:
            self._switch(f"session {arg}", resume=arg)
            return

        def picked(session_id: str | None) -> None:
            if session_id:
                self._switch(f"session {session_id}", resume=session_id)

        self.push_screen(ResumeScreen(self.sessions_root, current=self.agent.session_id), callback=picked)

    def _switch(self, what: str, **overrides: str) -> None:
        if self.agent_factory is None:
            self.notify(visible(f"Cannot switch to {what} from here: restart with the matching ctxtui flag."),
                        severity="error", markup=False)
            return
        if self.busy:
            self.notify("A turn is running: press Esc first.", severity="warning")
            return
        self.switch_agent(what, overrides)

    @work(group="agent", exclusive=True)
    async def switch_agent(self, what: str, overrides: dict[str, str], cleared: bool = False) -> None:
        if self.agent_factory is None:   # _switch and /clear say so before they get here
            return
        try:
            made = self.agent_factory(**overrides)
            new = await made if isinstance(made, Awaitable) else made
        except Exception as e:  # ConfigError, unknown session, ...: say so, keep the current agent
            self.notify(visible(f"Could not switch to {what}: {e}"), severity="error", markup=False)
            return
        old, self.agent = self.agent, new
        sandbox_command.carry(old.sandbox, new.sandbox)
        if "model" in overrides and not cleared:
            self.banner = SWITCHED_BANNER
        self._started_at = None
        try:
            await old.aclose()
        except Exception:
            pass
        await self._show_agent(resumed="resume" in overrides)
        back = (f" The previous session can be resumed with /resume {old.session_id}."
                if old.has_log() else "")
        if cleared:
            await self.conversation.add_notice(f"Context cleared: new session {new.session_id}, cost from $0.{back}")
        elif "model" in overrides:
            await self.conversation.add_notice(f"Now on {new.info.model} in a new session {new.session_id}.{back}")
