"""Text in the conversation can be selected with the mouse and copied: the one line-API widget
maps each row it draws back to its text (Textual's selection offsets), margins included."""
from __future__ import annotations

from textual.app import App, ComposeResult

from app.stylesheets import stylesheets
from app.tui.widgets.conversation.container import Conversation


class OneConversation(App):
    CSS_PATH = stylesheets("conversation.tcss")

    def compose(self) -> ComposeResult:
        yield Conversation()


async def test_dragging_over_two_blocks_selects_the_text_drawn():
    app = OneConversation()
    async with app.run_test(size=(80, 12)) as pilot:
        conv = app.query_one(Conversation)
        await conv.add_notice("a notice first")
        await conv.add_user("the prompt \x1b[31mred\x1b[0m [bold]here[/bold]")
        await pilot.pause()
        # row 0: the notice; row 1: the prompt's margin; row 2: the prompt ("█ the prompt ...")
        await pilot.mouse_down(Conversation, offset=(3, 0))
        await pilot.hover(Conversation, offset=(12, 2))
        await pilot.mouse_up(Conversation, offset=(12, 2))
        await pilot.pause()
        selected = app.screen.get_selected_text()
        assert selected is not None
        assert selected.startswith("notice first")
        assert selected.rstrip() == "notice first\n\n█ the prompt"    # the margin row is an empty line
        assert "\x1b" not in selected
        # the whole prompt row reads as drawn: escapes visible, markup literal
        assert "␛[31mred␛[0m [bold]here[/bold]" in conv.text_of(conv.messages[-1])
