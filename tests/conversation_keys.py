"""Reaching a block of the conversation the way a user does: focus it, move the cursor with the
arrows, press Enter."""
from __future__ import annotations

from app.tui.widgets.conversation.container import Conversation


def drawn_index(conv: Conversation, record) -> int:
    """Where `record` is among the drawn items (`conv.cursor` counts the earlier-messages line)."""
    shown = [i for i, r in enumerate(conv.messages) if r is record]
    assert shown, "the record is not drawn"
    return shown[0] + (1 if conv.archived else 0)


async def enter_on(pilot, conv: Conversation, record) -> None:
    """Focus the conversation, move its cursor with Up / Down to `record` and press Enter."""
    conv.focus()
    await pilot.pause()
    target = drawn_index(conv, record)
    for _ in range(len(conv.messages) + 2):
        await pilot.press("up" if conv.cursor is None or conv.cursor > target else "down")
        if conv.cursor == target:
            break
    assert conv.cursor == target
    await pilot.press("enter")
    await pilot.pause()
