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


async def test_a_clickable_block_is_lit_under_the_mouse_and_the_cursor_skips_empty_ones():
    """A tool call (it opens) is lit while the mouse is over it, a prompt (nothing to open) is not;
    Up / Down pass over an answer that has drawn nothing yet."""
    app = OneConversation()
    async with app.run_test(size=(80, 12)) as pilot:
        conv = app.query_one(Conversation)
        prompt = await conv.add_user("a prompt")
        tool = await conv.add_tool_call("t1", "bash", {"command": "ls"})
        await conv.append_text("")            # an answer begun: nothing drawn yet
        await pilot.pause()
        row = conv.drawn.row_of(tool)
        await pilot.hover(Conversation, offset=(5, row))
        await pilot.pause()
        assert conv._hover is not None and conv.drawn.records[conv._hover] is tool
        lit = conv.render_line(row)
        assert any(seg.style and seg.style.bgcolor == conv._cursor_style("hover").bgcolor for seg in lit)
        prompt_row = conv.drawn.row_of(prompt)
        await pilot.hover(Conversation, offset=(5, prompt_row))
        await pilot.pause()
        assert conv._hover is None
        conv.focus()
        await pilot.press("up")                # from nothing: the last block that shows something
        assert conv.messages[conv.cursor] is tool
        await pilot.press("down")              # the empty answer is passed over: the cursor stays
        assert conv.messages[conv.cursor] is tool
