"""/context, /help and the permission modal on an 80×24 terminal: each dialog fits the screen (its
right border drawn, nothing cut off), the largest items keep their token column, and the modal's
buttons stay on screen however long the call."""
from __future__ import annotations

from textual.app import App
from textual.widgets import Button

from agent_core import events as ev
from app.tui.app import CtxApp
from app.tui.screens.permission import PermissionScreen
from compaction.entry import Entry
from tests.tui_fakes import FakeAgent, context_event, cost_event

SIZE = (80, 24)


def screen_lines(app: App) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def assert_inside(app: App, dialog_id: str) -> None:
    region = app.screen.query_one(dialog_id).region
    assert region.x >= 0 and region.right <= SIZE[0] and region.y >= 0 and region.bottom <= SIZE[1], region


async def test_context_and_help_fit_an_80_by_24_terminal_and_scroll():
    agent = FakeAgent()
    long_name = "src/a/rather/long/path/to/the_module_with_a_long_name_" * 2
    agent.view = lambda: [Entry({"role": "user", "content": [{"type": "text", "text": "word " * (4000 + 100 * i)}]})
                          for i in range(6)] + [Entry({"role": "user", "content": [
                              {"type": "text", "text": f"{long_name}.py " + "x " * 9000}]})]
    app = CtxApp(agent, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await app.handle_event(context_event(120_000))
        await app.handle_event(cost_event())
        await pilot.pause()
        app.run_slash("/context")
        await pilot.pause()
        assert_inside(app, "#context-dialog")
        lines = screen_lines(app)
        assert lines[0].rstrip().endswith("╮") and lines[-1].rstrip().endswith("╯"), (lines[0], lines[-1])
        dialog = app.screen.query_one("#context-dialog")
        dialog.scroll_end(animate=False)
        await pilot.pause()
        shown = screen_lines(app)
        assert any("Largest items" in line for line in shown) and dialog.max_scroll_y > 0   # reachable
        rows = [line for line in shown if "user" in line.lower() and "│" in line]
        assert rows and all(line.rstrip().endswith("│") for line in rows)
        # each item's token count is drawn inside the dialog (the column the width used to cut off)
        assert all(any(ch.isdigit() for ch in line.rstrip("│ ").split()[-1]) for line in rows), rows
        await pilot.press("escape")
        await pilot.pause()
        app.run_slash("/help")
        await pilot.pause()
        assert_inside(app, "#help-dialog")


async def test_the_permission_modal_keeps_its_buttons_on_an_80_by_24_terminal():
    request = ev.PermissionRequest(id="t1", name="bash", input={"command": "\n".join(f"echo {i}" for i in range(80))})

    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(PermissionScreen(request))

    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert_inside(app, "#permission-dialog")
        for button in app.screen.query(Button):
            r = button.region
            assert r.height > 0 and r.bottom <= SIZE[1] and r.right <= SIZE[0], (button.label, r)


async def test_a_long_category_name_keeps_its_tokens_at_80_columns():
    """A category named by a log (any length) pushed its tokens and share out of /context's
    category table at 80 columns; its name is cut with an ellipsis instead."""
    import dataclasses

    from app.tui.screens.context_screen import ContextScreen

    c = context_event(150_000)
    c = dataclasses.replace(c, categories={**c.categories, "a_category_named_by_a_log_" * 3: 1_234_567})
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.push_screen(ContextScreen(c, (), ()))
        await pilot.pause()
        await pilot.pause()
        rows = [line for line in screen_lines(app) if line.startswith("│") and "■ " in line[26:]]
        assert len(rows) >= 10, rows
        for line in rows:     # every category row ends with its share, inside the dialog
            assert line.rstrip().endswith("│") and line.rstrip("│ ").endswith("%"), line
        assert any("…" in line and "1,234,567" in line for line in rows), rows
