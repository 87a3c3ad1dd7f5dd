"""What each slash command does: one method per command of the table in commands.py, dispatched
by name through `by_name`, which lists every one explicitly (tests/app/test_slash_commands.py
checks it against the table both ways). The prompt, the command palette and the key bindings all
end in `run`.

The commands act on the app through `SlashHost`, the app's public members they use: the agent,
the main screen's widgets and figures, Textual's screens, notifications and workers, and the app's
own turns (`run_compact`) and agent switch (`switch_agent`)."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol, TypeVar

from textual.app import AwaitMount
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker

from agent_core.context_budget import threshold_pct, threshold_words
from agent_core.context_items import head_items, largest_items, with_head
from agent_core.loop.compaction_preview import PreviewError
from agent_core.mcp.status_text import servers_text
from agent_core.providers.model_choices import choices as model_choices
from agent_core.security.visible_text import visible
from agent_core.tools.file_restore import Restore
from agent_core.waiting import PauseError
from agent_core.waiting import describe as describe_pause

from app.preview_text import headline
from app.tui import commands, sandbox_command
from app.tui.agent_port import AgentFactory, AgentHandle
from app.tui.figures import Figures
from app.tui.main_widgets import MainWidgets
from app.tui.screens.context_screen import ContextScreen
from app.tui.screens.diff_view import DiffScreen
from app.tui.screens.help import HelpScreen
from app.tui.screens.inspector import InspectorScreen
from app.tui.screens.model_picker import ModelPicker
from app.tui.screens.resume import ResumeScreen
from app.tui.screens.rewind import RewindScreen
from app.tui.screens.sandbox_screen import SandboxScreen
from app.tui.screens.transcript_browser import TranscriptBrowser
from app.tui.side_column import SideColumn

T = TypeVar("T")


class SlashHost(Protocol):
    """What the commands use of the app (app.tui.app.CtxApp): public members only."""

    @property
    def agent(self) -> AgentHandle: ...

    @property
    def busy(self) -> bool: ...                       # a turn (or a compaction) runs

    @property
    def agent_factory(self) -> AgentFactory | None: ...   # None: /model, /resume cannot switch

    @property
    def sessions_root(self) -> Path | None: ...

    @property
    def claude_root(self) -> Path | None: ...

    @property
    def long_context(self) -> bool: ...

    @property
    def widgets(self) -> MainWidgets: ...

    @property
    def side(self) -> SideColumn: ...

    @property
    def figures(self) -> Figures: ...

    @property
    def screen(self) -> Screen[object]: ...

    def notify(self, message: str, *, severity: SeverityLevel = "information", markup: bool = True) -> None: ...

    def push_screen(self, screen: Screen[T], callback: Callable[[T | None], None] | None = None) -> AwaitMount: ...

    def call_next(self, callback: Callable[..., Any], *args: Any) -> None: ...

    def run_worker(self, work: Awaitable[None], name: str | None = "", group: str = "default",
                   description: str = "", exit_on_error: bool = True, start: bool = True,
                   exclusive: bool = False) -> Worker[None]: ...

    def run_compact(self, focus: str | None) -> object: ...    # the compaction, as a turn

    def switch_agent(self, what: str, overrides: dict[str, str], cleared: bool = False) -> object: ...

    async def show_agent(self, resumed: bool) -> None: ...     # the agent's state, drawn again


class SlashCommands:
    """The slash commands, one method each (its argument, "" when none was typed)."""

    def __init__(self, host: SlashHost) -> None:
        self._host = host
        self.by_name: dict[str, Callable[[str], None]] = {
            "compact": self.compact,
            "context": self.context,
            "mcp": self.mcp,
            "sandbox": self.sandbox,
            "cost": self.cost,
            "clear": self.clear,
            "model": self.model,
            "threshold": self.threshold,
            "rewind": self.rewind,
            "diff": self.diff,
            "resume": self.resume,
            "transcripts": self.transcripts,
            "wait": self.wait,
            "help": self.help,
        }

    def run(self, text: str) -> None:
        """`/name [arg]` as typed: the command's method, or a notification saying what exists."""
        try:
            cmd = commands.parse(text)
        except commands.CommandError as e:
            self._error(str(e))
            return
        self.by_name[cmd.name](cmd.arg)

    # ----- small helpers ------------------------------------------------------------------------
    def _error(self, text: str) -> None:
        self._host.notify(visible(text), severity="error", markup=False)

    def _warn(self, text: str) -> None:
        self._host.notify(text, severity="warning")

    def _say(self, text: str) -> None:
        """A notice in the conversation, after the command returns."""
        self._host.call_next(self._host.widgets.conversation.add_notice, text)

    # ----- /compact -----------------------------------------------------------------------------
    def compact(self, arg: str) -> None:
        flag, _, focus = arg.partition(" ")
        if flag == "--preview":
            self._host.run_worker(self._preview(focus.strip() or None), group="preview", exclusive=True)
        else:
            self._host.run_compact(arg or None)

    async def _preview(self, focus: str | None) -> None:
        """`/compact --preview [focus]`: what a compaction now would do, in the inspector's layout;
        `a` there runs it. Nothing changes until then."""
        host = self._host
        if host.busy:
            self._warn("A turn is running: preview the compaction once it ends.")
            return
        try:
            preview = await host.agent.preview_compact(focus)
        except PreviewError as e:
            self._host.notify(visible(str(e)), severity="warning", markup=False)
            return
        if preview.compaction is None:
            await host.widgets.conversation.add_notice(headline(preview))
            return
        agent, model = host.agent, host.agent.info.model

        def closed(apply: bool | None) -> None:
            if apply and not host.busy:
                host.run_compact(focus)
            elif apply:
                self._warn("A turn is running: run /compact once it ends.")

        host.push_screen(InspectorScreen(preview.compaction, lambda u: agent.price(model, u), preview),
                         callback=closed)

    # ----- what the context and the session hold --------------------------------------------------
    def context(self, arg: str) -> None:
        host = self._host
        if not host.side.ready:    # the figures are the pane's
            host.side.later(lambda: self.context(arg))
            return
        pane = host.widgets.context_pane
        agent = host.agent
        memory = agent.memory
        items = with_head(largest_items(agent.view()), head_items(memory.files if memory else (), agent.mcp_tokens))
        sandbox = agent.sandbox.status() if agent.sandbox is not None else None
        host.push_screen(ContextScreen(pane.context, tuple(pane.history), items, sandbox=sandbox))

    def cost(self, arg: str) -> None:
        host = self._host
        if not host.side.ready:
            host.side.later(lambda: self.cost(arg))
            return
        pane = host.widgets.cost_pane
        if host.screen.maximized is pane:
            host.screen.minimize()
        else:
            host.screen.maximize(pane, container=False)

    def mcp(self, arg: str) -> None:
        agent = self._host.agent
        self._say(servers_text(agent.mcp_status(), agent.mcp_tokens))

    def diff(self, arg: str) -> None:
        self._host.run_worker(self._show_diff(), group="diff")

    async def _show_diff(self) -> None:
        """/diff: the files read and compared off the event loop (a session may have changed many)."""
        agent = self._host.agent
        changed = agent.changed_files()
        diff, files = await asyncio.to_thread(lambda: (agent.session_diff(), changed.files() if changed else []))
        n = len(files)
        about = (f"{n} file{'s' if n != 1 else ''} the agent's write and edit calls changed in this session, from "
                 "before the session to now (the bash tool's changes are not tracked)." if n else
                 "The agent's write and edit calls have changed no file in this session.")
        self._host.push_screen(DiffScreen("Session changes", about, diff))

    def help(self, arg: str) -> None:
        self._host.push_screen(HelpScreen())

    def transcripts(self, arg: str) -> None:
        self._host.push_screen(TranscriptBrowser(self._host.sessions_root, self._host.claude_root))

    # ----- settings of the session ----------------------------------------------------------------
    def sandbox(self, arg: str) -> None:
        sandbox = self._host.agent.sandbox
        if arg.strip():
            try:
                said = sandbox_command.apply(sandbox, arg)
            except ValueError as e:
                self._error(str(e))
                return
            self._sandbox_changed(said)
        elif sandbox is None:
            self._warn("This session has no OS sandbox.")
        else:
            def chosen(mode: str | None) -> None:
                if mode:
                    self._sandbox_changed(sandbox_command.apply(sandbox, mode))
            self._host.push_screen(SandboxScreen(sandbox.status()), callback=chosen)

    def _sandbox_changed(self, said: str) -> None:
        self._host.widgets.status.sandbox = sandbox_command.status_words(self._host.agent.sandbox)
        self._say(said)

    def wait(self, arg: str) -> None:
        try:        # refused on a real model, during a turn and for a bad duration, with what to do
            pause = self._host.agent.let_time_pass(arg)
        except PauseError as e:
            self._error(str(e))
            return
        self._say("⏱ " + describe_pause(pause))

    def threshold(self, arg: str) -> None:
        budget = self._host.agent.budget
        if not arg.strip():
            self._say("Auto-compact " + threshold_words(budget) + ". /threshold 70% or /threshold 120k moves it "
                      "(Alt+Up / Alt+Down: 1% at a time), /threshold default puts it back.")
            return
        try:
            pct = threshold_pct(arg, budget)
        except ValueError as e:
            self._error(str(e))
            return
        self._move_threshold(pct)

    def nudge_threshold(self, step: int) -> None:
        """Alt+Up / Alt+Down: the threshold a percent up or down."""
        budget = self._host.agent.budget
        now = budget.autocompact_pct if budget.autocompact_pct is not None else budget.pct_for(
            budget.autocompact_threshold)
        self._move_threshold(round(now + step, 1))

    def _move_threshold(self, pct: float | None) -> None:
        """Set the threshold, keep it for this model, say so, and redraw the figures with it."""
        agent = self._host.agent
        try:
            budget = agent.set_threshold(pct)
        except ValueError as e:
            self._error(str(e))
            return
        where = agent.keep_threshold(pct)
        self._say(f"Auto-compact {threshold_words(budget)}, {visible(where)}.")
        self._host.figures.context(agent.context_event())

    # ----- /rewind ------------------------------------------------------------------------------
    def rewind(self, arg: str) -> None:
        host = self._host
        if host.busy:
            self._warn("A turn is running: press Esc first, then /rewind.")
            return

        def chosen(index: int | None) -> None:
            if index is None:
                return
            plan = host.agent.file_plan(index)
            if not plan:
                self._rewind_to(index)
                return
            diff = "".join(r.diff for r in plan if not r.problem)
            skipped = [f"{r.copy.shown} ({r.problem})" for r in plan if r.problem]
            about = (f"The agent changed {len(plan)} file{'s' if len(plan) != 1 else ''} since this prompt. "
                     "Restoring puts each back as it was just before it (a file it created is removed); the "
                     "bash tool's changes are not known and stay." + (
                         " Cannot be restored: " + ", ".join(skipped) + "." if skipped else ""))

            def answered(answer: str | None) -> None:
                if answer is not None:      # "files" or "conversation"; Esc: nothing happens
                    self._rewind_to(index, plan if answer == "files" else None)
            host.push_screen(DiffScreen("Rewind: restore files?", about, diff, ask_restore=True), callback=answered)
        host.push_screen(RewindScreen(host.agent.rewind_points()), callback=chosen)

    def _rewind_to(self, index: int, plan: list[Restore] | None = None) -> None:
        self._host.run_worker(self._rewound(index, plan), group="agent", exclusive=True)

    async def _rewound(self, index: int, plan: list[Restore] | None) -> None:
        """Cut the conversation to just before the chosen prompt and put that prompt in the input;
        with a plan (the user saw its diff and said so), put the files back too."""
        host = self._host
        agent = host.agent
        try:
            text = agent.rewind(index)
            restored = agent.restore_files(plan) if plan else []
        except ValueError as e:
            self._error(str(e))
            return
        conv = host.widgets.conversation
        await conv.clear()
        await conv.load_entries(agent.entries)
        await conv.add_notice("Rewound: the conversation is as it was before this prompt, which is back in the "
                              "input to edit or send. The session log keeps what was after it.")
        if restored:
            await conv.add_notice("Files: " + "; ".join(restored))
            host.figures.refresh_changes()
        host.figures.context(agent.context_event())
        host.widgets.prompt_input.fill(text)

    # ----- another session: /clear, /model, /resume ----------------------------------------------
    def clear(self, arg: str) -> None:
        """A new session on the same model: new id, new log, cost from zero (the old one can be
        resumed). Without a factory (an embedded agent) the context is emptied in place."""
        host = self._host
        if host.busy:
            self._warn("A turn is running: press Esc first, then /clear.")
            return
        if host.agent_factory is not None:
            host.switch_agent("a new session", {"model": host.agent.info.model}, cleared=True)
            return
        host.agent.clear()
        host.call_next(self._cleared)

    async def _cleared(self) -> None:
        await self._host.show_agent(resumed=False)
        await self._host.widgets.conversation.add_notice("Context cleared. The session log still holds everything.")

    def model(self, arg: str) -> None:
        if arg:
            self._switch(f"model {arg}", model=arg)
            return
        agent = self._host.agent
        current, ttl = agent.info.model, agent.cache_ttl
        context = agent.context_event()
        head = sum(context.categories.get(k, 0) for k in ("system", "memory", "tools", "mcp_tools"))
        picker = ModelPicker(model_choices(ttl=ttl, long_context=self._host.long_context, current=current), current,
                             context.tokens, ttl, head)

        def picked(model: str | None) -> None:
            if model:
                self._switch(f"model {model}", model=model)

        self._host.push_screen(picker, callback=picked)

    def resume(self, arg: str) -> None:
        if arg:
            self._switch(f"session {arg}", resume=arg)
            return

        def picked(session_id: str | None) -> None:
            if session_id:
                self._switch(f"session {session_id}", resume=session_id)

        self._host.push_screen(ResumeScreen(self._host.sessions_root, current=self._host.agent.session_id),
                               callback=picked)

    def _switch(self, what: str, **overrides: str) -> None:
        if self._host.agent_factory is None:
            self._error(f"Cannot switch to {what} from here: restart with the matching ctxtui flag.")
            return
        if self._host.busy:
            self._warn("A turn is running: press Esc first.")
            return
        self._host.switch_agent(what, overrides)
