"""The Textual app. The agent loop runs in a worker; each event it yields is handed to the widget
that shows it (event_view.py). The app owns no accounting: numbers come from the loop's events and
the agent's own state, on their way to the panes in figures.py. It holds the agent as an
`AgentHandle` (agent_port.py): the members it uses, nothing else. The app owns its own state
(whether a turn runs: `busy`; which agent it holds) and hands it down to the widgets that show it.

Its parts, each given what it needs (none calls back into the app's private methods):
`MainWidgets` finds the main screen's widgets, `SideColumn` holds what waits for the side panes,
`Figures` hands the context and cost figures down, `EventView` shows the loop's events,
`SlashCommands` runs the slash commands, `EscGuard` decides whether an Esc cancels the turn and
`ScreenCover` follows the modals and the maximized pane over the main screen (focus, Esc).
Slash commands, the command palette and key bindings all end in the same `run_slash`.
"""
from __future__ import annotations

import signal
from pathlib import Path
from typing import AsyncIterator, Awaitable, Callable

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.widgets import TextArea

from agent_core import events as ev
from agent_core.loop.shell_input import is_shell, shell_command
from agent_core.security.visible_text import visible
from compaction.clock import now as clock_now

from app.stylesheets import stylesheets
from app.tui import commands, heap, sandbox_command
from app.tui.agent_port import AgentFactory, AgentHandle
from app.tui.esc_guard import EscGuard
from app.tui.event_view import EventView
from app.tui.figures import Figures
from app.tui.main_widgets import MainWidgets
from app.tui.screen_cover import ScreenCover
from app.tui.screens.inspector import InspectorScreen
from app.tui.side_column import SideColumn
from app.tui.slash_commands import SlashCommands
from app.tui.stop_signals import StopSignals
from app.tui.widgets.conversation import answer_record
from app.tui.widgets.conversation.compaction_marker import logged_compaction
from app.tui.widgets.conversation.container import Conversation
from app.tui.widgets.footer import AppFooter
from app.tui.widgets.mention_picker import MentionPicker
from app.tui.widgets.prompt import PromptInput
from app.tui.widgets.side_panes import SidePanes
from app.tui.widgets.status import StatusBar
from app.widgets.context_pane import ContextPane
from app.widgets.cost_pane import CostPane
from app.widgets.timeline import Timeline

CSS_FILES = ("app.tcss", "conversation.tcss", "prompt.tcss", "panes.tcss", "permission.tcss",
             "context_screen.tcss", "transcripts.tcss", "help.tcss", "inspector.tcss", "model_picker.tcss",
             "rewind.tcss", "diff.tcss")

# Signals that end the app like Ctrl+Q (SIGHUP: the terminal was closed). Exit code 128+N.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

DEMO_BANNER = "Demo model, offline: nothing leaves this machine. /model NAME switches to a Claude model."
DEMO_TIP = ("Tour: the README lists a dozen prompts that show each compaction layer; /wait lets time pass "
            "on the demo's clock, as a pause would, so the prompt cache goes cold.")
SWITCHED_BANNER = ("Demo model, offline (switched with /model demo): nothing leaves this machine. /model NAME "
                   "switches back to a Claude model.")


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
        self._signals = StopSignals(self._stop_signal)
        self.esc = EscGuard()
        self.widgets = MainWidgets(self)
        self.cover = ScreenCover(self, self.widgets, self.esc)
        self.side = SideColumn()
        self.figures = Figures(self, self.widgets, self.side, lambda: self.agent, clock)
        self.event_view = EventView(self, self.widgets, self.side, self.figures, clock)
        self.slash_commands = SlashCommands(self)

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

    @property
    def conversation(self) -> Conversation:
        return self.widgets.conversation

    @property
    def prompt_input(self) -> PromptInput:
        return self.widgets.prompt_input

    @property
    def context_pane(self) -> ContextPane:
        return self.widgets.context_pane

    @property
    def cost_pane(self) -> CostPane:
        return self.widgets.cost_pane

    @property
    def timeline(self) -> Timeline:
        return self.widgets.timeline

    @property
    def status(self) -> StatusBar:
        return self.widgets.status

    def watch_busy(self, busy: bool) -> None:
        try:
            self.status.busy = busy
        except NoMatches:  # the app is closing and the widgets are gone
            return
        self.refresh_bindings()

    # ----- start and end ---------------------------------------------------------------------------
    async def on_mount(self) -> None:
        # Without this SIGTERM or SIGHUP kill the process mid-turn: the session is left with a tool
        # call and no result, and the bash tool's processes run on. (Not loop.add_signal_handler,
        # which loses a signal when input floods the loop: stop_signals.py.)
        self._signals.catch(STOP_SIGNALS)
        if self.theme_name:
            self.theme = self.theme_name
        if self._user_keymap:
            self.set_keymap(self._user_keymap)
        await self.show_agent(resumed=bool(self.agent.entries))
        self.prompt_input.focus()
        self.cover.watch()
        self.set_interval(1.0, self.figures.tick, name="next request")
        if self.lazy_side:
            self.call_after_refresh(SideColumn.mount, self, self.clock)
        self.call_after_refresh(self._after_first_frame)

    def _after_first_frame(self) -> None:
        """What start-up left for later: the answer renderer, then (the command's app) the heap
        settled, so the renderer's objects are frozen with the rest of start-up's."""
        if not self.is_running:
            return
        answer_record.preload()
        if self.settle_heap and self._settled is None:
            self._settled = heap.settle()

    def on_side_panes_ready(self, message: SidePanes.Ready) -> None:
        """The side column is there: it gets what waited for it and the figures shown so far."""
        message.stop()
        self.side.opened()
        self.figures.side_opened()

    async def on_unmount(self) -> None:
        if self._settled is not None:
            self._settled.restore()
            self._settled = None
        self._signals.release()
        try:
            await self.agent.aclose()
        except Exception:  # closing must not hide the real exit
            pass

    def _stop_signal(self, sig: int) -> None:
        """Cancel the running turn (history repaired, tools killed) and exit; closing the agent on
        unmount waits for the cancel and closes the session."""
        self.agent.cancel()
        self.exit(128 + sig, return_code=128 + sig)

    # ----- Esc, and the side panes ----------------------------------------------------------------------
    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and any(
                b.action == "cancel_turn" for b in self._bindings.key_to_bindings.get(event.key, ())):
            self.esc.pressed(event.time)     # when it was pressed, not when the loop got to it
        await super().on_event(event)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Esc shows as "Cancel turn" only while a turn runs (greyed out otherwise)."""
        if action == "cancel_turn":
            return True if self.busy else None
        return True

    def action_cancel_turn(self) -> None:
        if self.esc.cancels() and self.busy:
            self.agent.cancel()

    def action_toggle_sidebar(self) -> None:
        """F2: the side panes shown or hidden (once mounted, when pressed in the first frame)."""
        self.side.later(lambda: SideColumn.toggle(self.screen_stack[0], self.prompt_input))

    # ----- the agent ---------------------------------------------------------------------------------
    async def show_agent(self, resumed: bool) -> None:
        """Render the agent's current state: status line, conversation (on resume), panes, timeline."""
        a = self.agent
        a.on_context = self.figures.context   # a figure confirmed by count_tokens while no turn runs
        status = self.status
        status.model = a.info.model
        status.offline = a.info.offline
        status.session_id = a.session_id
        status.sandbox = sandbox_command.status_words(a.sandbox)
        conv = self.conversation
        await conv.clear()
        self.side.later(lambda: self.timeline.reset())
        if status.offline:
            await conv.add_notice(f"{self.banner}\n{DEMO_TIP}")
        for notice in self.notices:
            await conv.add_notice(notice)
        if resumed:
            await conv.load_entries(a.entries)
            await conv.add_notice(f"Resumed session {a.session_id}: {len(a.entries):,} entries.")
            for line in a.load_warnings():
                await conv.add_notice(f"Session log: {line}")
            logged = tuple(a.compactions)

            def on_timeline() -> None:
                for c in logged:
                    self.timeline.add_compaction(c, resumed=True)
            self.side.later(on_timeline)
        self.figures.context(a.context_event())
        self.figures.cost(a.cost_event())
        self.figures.flush()
        self.figures.refresh_changes()
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
            self.figures.context(agent.context_event())

    @work(group="agent", exclusive=True)
    async def switch_agent(self, what: str, overrides: dict[str, str], cleared: bool = False) -> None:
        """/model, /resume or /clear: a new agent from the factory; the old one is closed."""
        if self.agent_factory is None:   # the commands say so before they get here
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
        self.figures.new_agent()
        try:
            await old.aclose()
        except Exception:
            pass
        await self.show_agent(resumed="resume" in overrides)
        back = (f" The previous session can be resumed with /resume {old.session_id}."
                if old.has_log() else "")
        if cleared:
            await self.conversation.add_notice(f"Context cleared: new session {new.session_id}, cost from $0.{back}")
        elif "model" in overrides:
            await self.conversation.add_notice(f"Now on {new.info.model} in a new session {new.session_id}.{back}")

    # ----- turns, in the agent worker ------------------------------------------------------------------
    async def handle_event(self, e: ev.Event) -> None:
        """One loop event shown (event_view.py)."""
        await self.event_view.handle(e)

    async def _drive(self, stream: AsyncIterator[ev.Event]) -> None:
        """A turn's events shown as they come (in batches: event_view.py), the app busy meanwhile."""
        self.busy = True
        try:
            await self.event_view.show(stream)
        finally:
            self.busy = False

    @work(group="agent")
    async def run_prompt(self, text: str) -> None:
        await self.conversation.add_user(text)
        await self._drive(self.agent.run(text))

    @work(group="agent")
    async def run_shell(self, command: str) -> None:
        """`!command` (shell mode): the user's own command in the workspace, no permission asked
        (they typed it); its output is shown and becomes their message in the context, no model
        called. Esc cancels it (`action_cancel_turn`), as it does a turn."""
        await self.event_view.start_shell(command)
        await self._drive(self.agent.shell(command))

    @work(group="agent")
    async def run_compact(self, focus: str | None) -> None:
        await self._drive(self.agent.compact(focus or None))

    # ----- the compaction inspector ------------------------------------------------------------------
    @on(Conversation.MarkerSelected)
    def _marker_selected(self, event: Conversation.MarkerSelected) -> None:
        event.stop()
        self.inspect(event.marker.event or logged_compaction(event.marker, self.agent.compactions))

    @on(Timeline.CompactionSelected)
    def _timeline_selected(self, event: Timeline.CompactionSelected) -> None:
        event.stop()
        self.inspect(event.compaction)

    def inspect(self, c: ev.Compaction) -> None:
        """Open the compaction inspector; the summary call is priced with the session's rates."""
        agent, model = self.agent, self.agent.info.model
        self.push_screen(InspectorScreen(c, lambda usage: agent.price(model, usage)))

    # ----- input --------------------------------------------------------------------------------------
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

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        """The prompt being typed goes into the next request's price (a /command is not sent)."""
        try:
            if event.text_area is not self.prompt_input:
                return
        except NoMatches:
            return
        self.figures.typed(event.text_area.text)

    def fill_prompt(self, text: str) -> None:
        self.prompt_input.fill(text)

    def run_slash(self, text: str) -> None:
        self.slash_commands.run(text)

    def action_slash(self, text: str) -> None:
        self.run_slash(text)

    def action_nudge_threshold(self, step: int) -> None:
        self.slash_commands.nudge_threshold(step)
