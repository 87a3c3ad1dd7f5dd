"""The slash commands' dispatch (app/tui/slash_commands.py): one method per command of the table
in commands.py, named in an explicit table both ways, and what `run` does with what was typed. The
host is a recording stand-in for the app (the commands use the app's public members only)."""
from __future__ import annotations

import inspect
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from app.tui import commands
from app.tui.screens.help import HelpScreen
from app.tui.slash_commands import SlashCommands
from tests.tui_fakes import FakeAgent


class Host:
    """What SlashCommands reaches for, recorded."""

    def __init__(self, *, busy: bool = False, factory: Any = None) -> None:
        self.agent = FakeAgent()
        self.busy = busy
        self.agent_factory = factory
        self.sessions_root = self.claude_root = None
        self.long_context = False
        self.notified: list[tuple[str, str]] = []
        self.pushed: list[object] = []
        self.said: list[str] = []
        self.widgets = SimpleNamespace(conversation=SimpleNamespace(add_notice=self.said.append))
        self.calls: list[tuple] = []

    def notify(self, message: str, *, severity: str = "information", markup: bool = True) -> None:
        self.notified.append((severity, message))

    def push_screen(self, screen: object, callback: Any = None) -> None:
        self.pushed.append(screen)

    def call_next(self, callback: Any, *args: Any) -> None:
        callback(*args)

    def run_worker(self, work: Any, **kw: Any) -> None:
        work.close()                  # not run here: which worker, in which group, is what is checked
        self.calls.append(("worker", kw.get("group"), kw.get("exclusive", False)))

    def run_compact(self, focus: str | None) -> None:
        self.calls.append(("compact", focus))

    def switch_agent(self, what: str, overrides: dict[str, str], cleared: bool = False) -> None:
        self.calls.append(("switch", what, overrides, cleared))


def test_every_command_in_the_table_has_a_method_and_every_method_a_command():
    slash = SlashCommands(Host())
    assert set(slash.by_name) == {c.name for c in commands.COMMANDS}
    for name, handler in slash.by_name.items():
        assert inspect.ismethod(handler) and handler.__self__ is slash, name
        assert handler.__name__ == name, f"/{name} is dispatched to {handler.__name__}"
        assert list(inspect.signature(handler).parameters) == ["arg"], name


def test_no_command_is_found_by_its_name_as_a_string():
    """The dispatch names each method: nothing under app/tui looks a method up by a built name."""
    tui = Path(__file__).resolve().parents[2] / "app" / "tui"
    built = re.compile(r"getattr\([^)]*f[\"']")
    found = [f"{p.name}:{n}" for p in sorted(tui.rglob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1) if built.search(line)]
    assert not found, found


def test_a_command_runs_with_what_was_typed_after_it():
    host = Host()
    slash = SlashCommands(host)
    slash.run("/compact keep the plan")
    slash.run("/compact")
    slash.run("/compact --preview  the tests ")
    slash.run("/help")
    assert host.calls == [("compact", "keep the plan"), ("compact", None), ("worker", "preview", True)]
    assert [type(s) for s in host.pushed] == [HelpScreen]
    assert not host.notified


def test_an_unknown_command_says_which_exist_and_runs_nothing():
    host = Host()
    SlashCommands(host).run("/compcat now")
    ((severity, message),) = host.notified
    assert severity == "error" and "/compcat" in message and "/compact" in message
    assert not host.calls and not host.pushed


def test_threshold_alone_says_where_it_is():
    host = Host()
    SlashCommands(host).run("/threshold")
    (said,) = host.said
    assert said.startswith("Auto-compact ") and "/threshold default" in said


@pytest.mark.parametrize("typed, expected", [
    ("/model claude-sonnet-4-5", ("switch", "model claude-sonnet-4-5", {"model": "claude-sonnet-4-5"}, False)),
    ("/resume 20260101T000000-abcdef", ("switch", "session 20260101T000000-abcdef",
                                        {"resume": "20260101T000000-abcdef"}, False)),
    ("/clear", ("switch", "a new session", {"model": "demo"}, True)),
])
def test_switching_commands_ask_the_app_for_a_new_agent(typed, expected):
    host = Host(factory=lambda **kw: None)
    SlashCommands(host).run(typed)
    assert host.calls == [expected]


@pytest.mark.parametrize("typed", ["/model claude-sonnet-4-5", "/resume abc", "/clear", "/rewind"])
def test_a_running_turn_holds_what_would_change_the_conversation(typed):
    host = Host(busy=True, factory=lambda **kw: None)
    SlashCommands(host).run(typed)
    ((severity, message),) = host.notified
    assert severity == "warning" and "A turn is running" in message
    assert not host.calls and not host.pushed


def test_without_a_factory_model_cannot_switch():
    host = Host()
    SlashCommands(host).run("/model claude-sonnet-4-5")
    ((severity, message),) = host.notified
    assert severity == "error" and message.startswith("Cannot switch to model claude-sonnet-4-5")
    assert not host.calls


def test_sandbox_without_one_says_so():
    host = Host()
    slash = SlashCommands(host)
    slash.run("/sandbox")
    slash.run("/sandbox ask")
    assert [s for s, _ in host.notified] == ["warning", "error"]
    assert "no OS sandbox" in host.notified[0][1] and "no OS sandbox" in host.notified[1][1]
    assert not host.pushed
