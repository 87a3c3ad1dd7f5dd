"""@-mentions in the TUI: `@` opens the file picker over the workspace, typing filters it,
Up/Down/Enter/Tab choose, Esc closes it keeping the text; the chosen file reaches the model in the
request and shows as a chip. Snapshots of the open picker at 80×24 and 120×40."""
from __future__ import annotations

import pytest

from agent_core.providers.demo.model import DemoModel
from app.tui.app import CtxApp
from compaction.entry import Entry
from app.tui.launch import build_app
from app.tui.widgets.conversation.history import entry_records
from app.tui.widgets.conversation.mention_chip import MentionRecord
from app.tui.widgets.conversation.user_message import UserRecord
from app.tui.widgets.mention_picker import MentionPicker, rank
from tests.app.snapshot_helpers import settled
from tests.app.tui_helpers import agent_running
from tests.tui_fakes import FIXED_TIME, FakeAgent


class RecordingDemo(DemoModel):
    """The demo model, keeping every request's messages."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.requests: list[list[dict]] = []

    def stream(self, *, messages: list[dict], **kw):
        self.requests.append(messages)
        return super().stream(messages=messages, **kw)


def _workspace(tmp_path):
    ws = tmp_path / "ws"
    for rel, text in {"src/alpha.py": "ALPHA = 'the alpha module'\n", "src/beta.py": "BETA = 2\n",
                      "docs/guide.md": "# Guide\n", "README.md": "# Project\n"}.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return ws


async def _until(pilot, test, tries: int = 200) -> None:
    for _ in range(tries):
        if test():
            return
        await pilot.pause(0.02)
    raise AssertionError("the picker never got there")


def _rows(picker: MentionPicker) -> list[str]:
    return [str(picker.get_option_at_index(i).prompt) for i in range(picker.option_count)]


async def test_type_at_filter_choose_and_send_the_model_sees_the_file(tmp_path):
    ws = _workspace(tmp_path)
    client = RecordingDemo(ws, context_window=30_000)
    app = build_app({"model": "demo", "allow": ["all"]}, environ={}, workspace=ws, client=client, claude_root=None)
    async with app.run_test(size=(120, 40)) as pilot:
        app.prompt_input.focus()
        await pilot.press(*"explain @")
        picker = app.query_one(MentionPicker)
        await _until(pilot, lambda: picker.is_open and picker.option_count == 4)
        assert _rows(picker) == ["README.md", "docs/guide.md", "src/alpha.py", "src/beta.py"]
        await pilot.press(*"srcpy")
        await _until(pilot, lambda: _rows(picker) in (["src/beta.py", "src/alpha.py"],
                                                        ["src/alpha.py", "src/beta.py"]))
        want = _rows(picker)[1]
        await pilot.press("down", "enter")
        assert app.prompt_input.text == f"explain @{want} "
        assert not picker.is_open
        await pilot.press(*"now")
        await pilot.press("enter")
        await pilot.pause()
        await _until(pilot, lambda: not agent_running(app), tries=500)
        first = client.requests[0][-1]
        texts = [b["text"] for b in first["content"] if b.get("type") == "text"]
        assert texts[0] == f"explain @{want} now"
        body = (ws / want).read_text().strip()
        assert any(t.startswith(f"[Contents of {want}") and body in t for t in texts[1:])
        [chip] = app.conversation.records_of(MentionRecord)
        assert chip.path == want and chip.total_lines == 1


async def test_tab_chooses_the_first_match_and_esc_keeps_the_text(tmp_path):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME, files=(_workspace(tmp_path), ()))
    async with app.run_test(size=(120, 40)) as pilot:
        app.prompt_input.focus()
        await pilot.press(*"see @gui")
        picker = app.query_one(MentionPicker)
        await _until(pilot, lambda: _rows(picker) == ["docs/guide.md"])
        await pilot.press("escape")
        assert not picker.is_open and app.prompt_input.text == "see @gui"
        await pilot.press("d")                       # still the dismissed mention: stays closed
        await pilot.pause()
        assert not picker.is_open
        await pilot.press(*["backspace"] * 5, "@")
        await _until(pilot, lambda: picker.is_open)   # a new @ opens it again
        await pilot.press(*"READ", "tab")
        assert app.prompt_input.text == "see @README.md "


async def test_up_down_wrap_and_enter_with_no_match_sends(tmp_path):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME, files=(_workspace(tmp_path), ()))
    async with app.run_test(size=(120, 40)) as pilot:
        app.prompt_input.focus()
        await pilot.press("@")
        picker = app.query_one(MentionPicker)
        await _until(pilot, lambda: picker.option_count == 4)
        await pilot.press("up")
        assert picker.chosen() == "src/beta.py"
        await pilot.press(*"zzzz")
        await _until(pilot, lambda: picker.option_count == 0 and "no match" in str(picker.border_subtitle))
        await pilot.press("enter")
        await pilot.pause()
        assert app.prompt_input.text == ""           # sent as typed
        assert not picker.is_open


async def test_a_hostile_file_name_is_shown_escaped_and_inserted_quoted(tmp_path):
    ws = _workspace(tmp_path)
    (ws / "evil\x1b[2K[bold]x.txt").write_text("x\n")
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME, files=(ws, ()))
    async with app.run_test(size=(120, 40)) as pilot:
        app.prompt_input.focus()
        await pilot.press(*"@evil")
        picker = app.query_one(MentionPicker)
        await _until(pilot, lambda: picker.option_count == 1)
        assert _rows(picker) == ["evil␛[2K[bold]x.txt"]       # escaped, and not markup
        await pilot.press("enter")
        assert app.prompt_input.text == '@"evil\\x1b[2K[bold]x.txt" '


def test_ranking_survives_a_hostile_name_made_to_explode_the_matcher():
    names = ["a" * 300 + ".txt", "src/app.py"]
    assert [i for i, _ in rank("aaaaaaaaab", names)] == []
    assert [i for i, _ in rank("aaaaaaaat", names)] == [0]


def test_a_resumed_prompt_shows_its_chips_not_the_files():
    e = Entry({"role": "user", "content": [
        {"type": "text", "text": "fix @a.py"},
        {"type": "text", "text": "[Contents of a.py, attached because the user mentioned it: it need not be read "
                                 "again]\n<file path=\"a.py\">\n     1\tx = 1\n</file>"}]},
        meta={"mentions": [{"path": "a.py", "block": 1, "partial": False, "lines": 1, "total_lines": 1}]})
    records = entry_records(e, {})
    assert [type(r) for r in records] == [UserRecord, MentionRecord]
    assert records[1].label().plain == "@ a.py · 1 line · attached"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_picker_open(snap_compare, utc, tmp_path, size):
    ws = _workspace(tmp_path)
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME, files=(ws, ()))

    async def run_before(pilot):
        app.prompt_input.cursor_blink = False
        app.prompt_input.focus()
        await pilot.press(*"what does @src do")
        for _ in range(4):
            await pilot.press("left")
        picker = app.query_one(MentionPicker)
        await _until(pilot, lambda: picker.is_open and picker.option_count == 2)
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


async def test_a_prompt_from_the_history_ending_in_a_mention_does_not_open_the_picker(tmp_path):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME, files=(_workspace(tmp_path), ()))
    async with app.run_test(size=(120, 40)) as pilot:
        app.prompt_input.prompt_history.add("older")
        app.prompt_input.prompt_history.add("look at @src")
        app.prompt_input.focus()
        await pilot.press("up")
        await pilot.pause(0.1)
        assert app.prompt_input.text == "look at @src"
        assert not app.query_one(MentionPicker).is_open
        await pilot.press("up")                      # Up still walks the history
        assert app.prompt_input.text == "older"
