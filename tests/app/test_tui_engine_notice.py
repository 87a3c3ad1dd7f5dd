"""The TUI says, once at start, why the server engine it was asked for runs as the local engine."""
from __future__ import annotations

from app.tui.launch import build_app
from app.tui.widgets.conversation.notice_message import NoticeRecord
from tests.agent_helpers import SECRET, make_workspace, user_dirs
from tests.fake_anthropic import FakeAnthropic


def _shown(conv, record) -> str:
    """What a record shows on screen, its wrapped lines read as one line."""
    return " ".join(conv.text_of(record).split())


async def test_the_fallback_to_the_local_engine_is_said_at_start(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic() as fake:
        env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url}
        app = build_app({"model": "claude-sonnet-4-5", "engine": "server"}, environ=env, workspace=ws,
                        claude_root=None)
        async with app.run_test() as pilot:
            await pilot.pause()
            conv = app.conversation
            said = [_shown(conv, n) for n in conv.records_of(NoticeRecord)]
    assert sum("cannot be used" in s and "local engine" in s for s in said) == 1, said
