"""The TUI says a compaction policy other than the default once, at start (issue 25)."""
from __future__ import annotations

from app.tui.launch import build_app
from app.tui.widgets.conversation.notice_message import NoticeRecord
from tests.demo_project import fixed_place


def _shown(conv, record) -> str:
    """What a record shows on screen, its wrapped lines read as one line."""
    return " ".join(conv.text_of(record).split())


async def test_the_tui_says_the_policy_once_at_start(tmp_path):
    with fixed_place() as (ws, env):
        app = build_app({"model": "demo", "policy": "summary"}, environ=env, workspace=ws, claude_root=None)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            conv = app.conversation
            shown = [_shown(conv, n) for n in conv.records_of(NoticeRecord)]
    assert sum("compaction policy summary: only the LLM summary" in t for t in shown) == 1, shown
