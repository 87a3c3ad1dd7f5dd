"""Issue 50 in the TUI: /sandbox shows the state and boundary and switches the mode live; the
status line says whether the sandbox is on; shell mode (`!command`) runs inside it, so a planted
~/.ssh key is not readable and a write outside the workspace fails; a sandbox that cannot run is
said, never silently skipped."""
from __future__ import annotations


import pytest

from agent_core.os_sandbox import probe
from agent_core.os_sandbox.proxy import parse_target
from agent_core.os_sandbox.sandbox import OsSandbox, SandboxStatus
from agent_core.os_sandbox.settings import SandboxSettings
from app.tui import sandbox_command
from app.tui.screens.context_screen import ContextScreen
from app.tui.screens.permission import PermissionScreen
from app.tui.screens.sandbox_screen import SandboxScreen, status_lines
from app.tui.widgets.conversation.shell_block import ShellRecord
from tests.agent_core.os_sandbox.sandbox_helpers import planted_home, require_bwrap
from tests.agent_helpers import make_workspace
from tests.app.tui_helpers import make_app, wait_idle
from tests.pilot_until import until

SIZE = (120, 36)


@pytest.fixture
def on_disk(monkeypatch):
    with planted_home(monkeypatch, "ctxtui-sbx-tui-") as (ws, home):
        yield make_workspace(ws), home


async def shell(app, pilot, command: str) -> str:
    app.prompt_input.focus()
    app.fill_prompt("!" + command)
    await pilot.press("enter")
    await wait_idle(app, pilot)
    return app.conversation.text_of(app.conversation.records_of(ShellRecord)[-1])


async def test_shell_mode_runs_inside_and_the_status_line_says_so(on_disk):
    require_bwrap()
    ws, home = on_disk
    app, _ = make_app(ws, sandbox="auto-allow")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "sandbox auto-allow" in str(app.status.fit(200))
        shown = await shell(app, pilot, f"cat {home}/.ssh/id_rsa; echo x > {home}/planted; echo done")
        assert "planted-key-material" not in shown and "done" in shown
        assert not (home / "planted").exists()
        app.run_slash("/sandbox off")
        await pilot.pause()
        assert "sandbox" not in str(app.status.render())
        shown = await shell(app, pilot, f"cat {home}/.ssh/id_rsa")
        assert "planted-key-material" in shown                  # control: off is really unconfined
        app.run_slash("/sandbox ask")
        app.run_slash("/clear")                                 # a new agent, from the settings (auto-allow)
        await wait_idle(app, pilot)
        await pilot.pause(0.2)
        assert app.agent.sandbox.settings.mode == "ask", "/clear forgot what /sandbox chose"


async def test_the_sandbox_screen_chooses_the_mode(on_disk):
    require_bwrap()
    ws, _ = on_disk
    app, _ = make_app(ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.run_slash("/sandbox")
        await pilot.pause()
        assert isinstance(app.screen, SandboxScreen)
        text = str(app.screen.query_one("#sandbox-status").render())
        assert "off" in text and "Hidden" in text
        await pilot.press("home")                   # to auto-allow, the first row
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, SandboxScreen)
        assert app.agent.sandbox.settings.mode == "auto-allow"
        assert "sandbox auto-allow" in str(app.status.fit(200))
        app.run_slash("/context")
        await until(pilot, lambda: isinstance(app.screen, ContextScreen) and app.screen.query("#context-sandbox"),
                    "the /context screen")
        assert "on (auto-allow)" in str(app.screen.query_one("#context-sandbox").render())


async def test_an_unusable_sandbox_is_said_at_start_and_on_the_status_line(on_disk, monkeypatch):
    ws, _ = on_disk
    monkeypatch.setattr(probe, "check", lambda bwrap=None: probe.Availability(
        False, problem="bubblewrap (bwrap) is not installed", fix="Install bubblewrap"))
    app, _ = make_app(ws, sandbox="auto-allow")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "sandbox unavailable: bash asks" in str(app.status.fit(200))
        assert "no sandbox" in str(app.status.render())            # at 120 columns, the short form
        assert any("bubblewrap (bwrap) is not installed" in n for n in app.notices)


async def test_a_bad_sandbox_argument_says_what_to_type(on_disk):
    ws, _ = on_disk
    app, _ = make_app(ws)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.run_slash("/sandbox sometimes")
        await pilot.pause()
        assert app.agent.sandbox.settings.mode == "off"
        assert any("/sandbox auto-allow | ask | off" in str(n.message) for n in app._notifications)


@pytest.mark.parametrize("usable, said", [(True, "It will run in the OS sandbox (network: none)"),
                                          (False, "It will run UNCONFINED, with your rights")])
async def test_the_permission_prompt_says_where_the_command_will_run(on_disk, monkeypatch, usable, said):
    ws, _ = on_disk
    if usable:
        require_bwrap()
    else:
        monkeypatch.setattr(probe, "check", lambda bwrap=None: probe.Availability(
            False, problem="bubblewrap (bwrap) is not installed", fix="Install bubblewrap"))
    app, _ = make_app(ws, sandbox="ask", allow_all=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.prompt_input.focus()
        app.fill_prompt("what do the tests cover?")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, PermissionScreen), "the permission prompt")
        assert app.screen.request.name == "bash"
        assert said in str(app.screen.query_one("#permission-note").render())
        await pilot.press("d")
        await wait_idle(app, pilot)


def test_a_hostile_host_name_from_a_command_is_shown_escaped():
    """The proxy's refused hosts come from the sandboxed command's own request line: the /sandbox
    screen (and /context) show them through the one sanitizer, never raw."""
    _, host, port, _ = parse_target(b"CONNECT \x1b]0;owned\x07evil.example:443 HTTP/1.1\r\n\r\n")
    shown = str(status_lines(SandboxStatus("auto-allow", True, "pypi.org", blocked=(f"{host}:{port}",))))
    assert "\x1b" not in shown and "\x07" not in shown and "␛]0;owned" in shown


def test_the_typed_argument_sets_the_mode_or_the_network(tmp_path, monkeypatch):
    monkeypatch.setattr(probe, "check", lambda bwrap=None: probe.Availability(True, "/usr/bin/bwrap", "/usr/bin/socat"))
    box = OsSandbox(SandboxSettings(), tmp_path)
    assert sandbox_command.status_words(None) == "" and sandbox_command.status_words(box) == "sandbox off"
    assert "network: pypi.org, *.pythonhosted.org" in sandbox_command.apply(box, "auto-allow") + \
        sandbox_command.apply(box, "network pypi.org,*.pythonhosted.org")
    assert box.settings.hosts == ("pypi.org", "*.pythonhosted.org")
    assert sandbox_command.status_words(box) == "sandbox auto-allow · net hosts"
    for bad in ("network all,pypi.org", "loose", "network"):
        with pytest.raises(ValueError, match="/sandbox auto-allow"):
            sandbox_command.apply(box, bad)
    with pytest.raises(ValueError, match="no OS sandbox"):
        sandbox_command.apply(None, "ask")
