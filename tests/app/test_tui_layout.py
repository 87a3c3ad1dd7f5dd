"""The main screen at any size (issue 14): answers that open with an XML-style tag, the sidebar that
collapses on narrow terminals and toggles with a key, the status line's figures, and where focus
goes when a screen or the maximized cost pane closes. Pilot tests on the scripted FakeAgent."""
from __future__ import annotations

import pytest
from textual.widgets.markdown import MarkdownBlock

from app.tui import CtxApp
from app.widgets.conversation import AssistantMessage
from compaction.entry import Entry
from tests.tui_fakes import FIXED_TIME, FakeAgent

TAGGED = ("<summary>\nThe user asked for a map of the engine.\n</summary>\n\n"
          "<analysis>\nThree layers run before the summary.\n</analysis>\n\nSee **compaction/**.")
SHOWN = ("<summary>", "The user asked for a map of the engine.", "</summary>", "<analysis>",
         "Three layers run before the summary.", "See compaction/.")


def make_app(**kw) -> CtxApp:
    return CtxApp(FakeAgent(**kw), clock=lambda: FIXED_TIME)


def shown_text(md: AssistantMessage) -> str:
    """What the message's blocks draw, as plain text."""
    return "\n".join(str(b.render()) for b in md.query(MarkdownBlock))


def assert_all_shown(md: AssistantMessage) -> None:
    text = shown_text(md)
    missing = [s for s in SHOWN if s not in text]
    assert not missing, f"not shown: {missing!r} in {text!r}"


# ----- item 1: an answer that begins with a tag ------------------------------------------------------
async def test_an_answer_opening_with_a_tag_is_shown_while_streamed_and_after():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        conv = app.conversation
        await conv.add_user("summarise")
        for i in range(0, 60, 7):   # the first chunks hold only the opening tag's line
            await conv.append_text(TAGGED[i:i + 7])
        await pilot.pause(0.2)
        md = conv.current_markdown
        assert "<summary>" in shown_text(md)   # the stream already shows it, before the end
        await conv.append_text(TAGGED[63:])
        await conv.end_text()
        await pilot.pause()
        assert md.source == TAGGED
        assert_all_shown(md)
        # The copy kept when a long conversation pages it out renders the same way once shown again.
        copy = md.clone()
        await conv.mount(copy)
        await pilot.pause()
        assert_all_shown(copy)


async def test_a_resumed_answer_opening_with_a_tag_is_shown():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.conversation.load_entries([
            Entry({"role": "user", "content": [{"type": "text", "text": "summarise"}]}),
            Entry({"role": "assistant", "content": [{"type": "text", "text": TAGGED}]}),
        ])
        await pilot.pause()
        (md,) = app.conversation.query(AssistantMessage)
        assert_all_shown(md)


@pytest.mark.parametrize("text", ["<b>bold?</b> plain", "a < b and c > d", "<!-- note -->\nafter"])
async def test_other_angle_brackets_stay_literal(text):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.conversation.append_text(text)
        await app.conversation.end_text()
        await pilot.pause()
        shown = shown_text(app.conversation.query_one(AssistantMessage))
        assert " ".join(shown.split()) == " ".join(text.split())
