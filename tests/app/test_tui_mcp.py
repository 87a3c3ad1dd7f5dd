"""The TUI with MCP servers and memory files (issue 28): servers start beside the first frame and
say their tools, or why not, in the conversation; the context pane shows the MCP tools and the
memory files as categories of their own; the servers are stopped when the app exits."""
from __future__ import annotations

import pytest

from app.tui.app import CtxApp
from app.tui.launch import build_app
from app.tui.screens.context_screen import ContextScreen
from app.tui.widgets.conversation.notice_message import NoticeRecord
from tests.agent_helpers import make_workspace, user_dirs
from tests.mcp_helpers import calc_config, gone
from tests.app.snapshot_helpers import fill, settled
from tests.pilot_until import until
from tests.tui_fakes import FIXED_TIME, FakeAgent


def _said(app) -> list[str]:
    conv = app.conversation
    return [" ".join(conv.text_of(n).split()) for n in conv.records_of(NoticeRecord)]


async def test_servers_start_with_the_app_and_their_tools_are_a_category(tmp_path):
    ws = make_workspace(tmp_path)
    (ws / "CLAUDE.md").write_text("Use tabs.\n" * 50)
    cfg, pid = calc_config(tmp_path)
    broken, _ = calc_config(tmp_path, mode="fail", name="broken")
    app = build_app({"model": "demo", "mcp_config": [str(cfg), str(broken)]}, environ=user_dirs(), workspace=ws,
                    claude_root=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: any("MCP server calc: 4 tools" in s for s in _said(app)), "the calc notice")
        await until(pilot, lambda: "mcp_tools" in app.agent.context_event().categories, "the MCP category")
        await pilot.pause()
        said = _said(app)
        assert any("MCP server broken did not start" in s and "/nope.db" in s for s in said), said
        cats = app.agent.context_event().categories
        assert cats["mcp_tools"] > 0 and cats["memory"] > 0
        pane = app.screen.query_one("#side")
        await until(pilot, lambda: "MCP tools" in str(pane.query_one("ContextPane")._breakdown_view.render()),
                    "the pane's MCP row")
        assert "Memory" in str(pane.query_one("ContextPane")._breakdown_view.render())
        app.run_slash("/mcp")
        await until(pilot, lambda: any(s.startswith("MCP servers (2)") for s in _said(app)), "the /mcp list")
        (listing,) = [s for s in _said(app) if s.startswith("MCP servers (2)")]
        assert "calc — connected" in listing and "4 tools" in listing and "add, environment, crash" in listing
        assert "broken — failed" in listing and "--allow mcp__SERVER" in listing
        app.run_slash("/context")
        await until(pilot, lambda: isinstance(app.screen, ContextScreen), "the /context screen")
        await pilot.pause()
        kinds = {(i.kind, i.label): i.tokens for i in app.screen.items}
        assert kinds[("MCP tools", "calc")] == app.agent.mcp_tokens["calc"]
        memory = [n for (kind, label), n in kinds.items() if kind == "memory file" and label.endswith("CLAUDE.md")]
        assert memory == [app.agent.memory.files[0].tokens], kinds
    assert gone(pid)


async def test_without_servers_mcp_says_how_to_name_them(tmp_path):
    ws = make_workspace(tmp_path)
    app = build_app({"model": "demo"}, environ=user_dirs(), workspace=ws, claude_root=None)
    async with app.run_test(size=(80, 24)) as pilot:
        app.run_slash("/mcp")
        await until(pilot, lambda: any("No MCP servers" in s for s in _said(app)), "the /mcp answer")
        assert app.agent.mcp is None and "mcp_tools" not in app.agent.context_event().categories


def _with_head_categories(agent):
    """A FakeAgent whose context holds a memory file and an MCP server's tools (fixed figures)."""
    from dataclasses import replace
    from pathlib import Path
    from types import SimpleNamespace

    from tests.tui_fakes import context_event
    agent.memory = SimpleNamespace(files=[SimpleNamespace(path=Path("/home/dev/proj/CLAUDE.md"), tokens=1_850)])
    agent.mcp_tokens = {"github": 5_400}
    base = context_event(60_000)
    cats = {**base.categories, "memory": 1_850, "mcp_tools": 5_400}
    cats["tool_results"] -= 7_250      # the same 60,000 in all
    return replace(base, categories=cats)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize("command", [None, "/context"], ids=["pane", "context"])
def test_memory_and_mcp_categories_snapshot(snap_compare, utc, size, command):
    agent = FakeAgent()
    app = CtxApp(agent, clock=lambda: FIXED_TIME)
    event = _with_head_categories(agent)

    async def run_before(pilot):
        await fill(app, "ok", pilot)
        app.figures.context(event)
        app.figures.flush()
        if command:
            app.run_slash(command)
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
