"""The compaction preview on screen and headless (issue 27): `/compact --preview [FOCUS]` opens the
inspector's layout with what each layer would do and a key to apply it, Esc leaves everything as it
was; `--compact --preview` prints one JSON object with `"preview": true` and leaves the session log
byte for byte as it was. Snapshots at 80×24 and 120×40 (a fixed preview)."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from agent_core import events as ev
from agent_core.loop.compaction_parts import compaction_parts
from agent_core.loop.compaction_preview import CompactionPreview, PreviewStep
from agent_core.loop.factory import build_agent
from agent_core.config import load_config
from app.preview_text import money_lines, preview_lines
from app.stylesheets import stylesheets
from app.tui.app import CtxApp
from app.tui.screens.inspector import InspectorScreen
from compaction.cache_economics import reread_clause
from compaction.entry import assistant, tool_result_block, user
from compaction.loss_report import loss_report
from tests.agent_helpers import make_workspace, user_dirs
from tests.headless_helpers import run_headless
from tests.pilot_until import until

BODY = "def parse_header(x):\n    return x\n" * 400
SUMMARY = 200


def fixed(e, n: int):
    return dataclasses.replace(e, uuid=f"{n:08d}-0000-4000-8000-000000000000")


def a_preview() -> CompactionPreview:
    """A preview whose figures add up: the headline, the steps and the parts all from these entries."""
    before = [fixed(user("Refactor src/parse_header.py so parse_header handles ISSUE-42"), 1),
              fixed(assistant([{"type": "tool_use", "id": "t1", "name": "read_file",
                                "input": {"path": "src/parse_header.py"}}], response_id="r1"), 2),
              fixed(user([tool_result_block("t1", BODY)]), 3),
              fixed(assistant("I read it; the header parser needs a rewrite.", response_id="r2"), 4),
              fixed(user("go on"), 5)]
    after = [fixed(user("(the summary the model would write: about 200 tokens)", kind="summary"), 6), before[-1]]
    parts = compaction_parts(before, after, ["autocompact"])
    parts["added"][0]["tokens"] = parts["added_tokens"] = SUMMARY   # the sized summary, as a preview has it
    parts["loss"] = loss_report(before, after)
    tokens_before = sum(e.tokens for e in before)
    tokens_after = SUMMARY + before[-1].tokens
    c = ev.Compaction(layer="autocompact", trigger="manual", tokens_before=tokens_before, tokens_after=tokens_after,
                      transcript_path="/state/sessions/s1/transcripts/20260101T000000-manual.jsonl",
                      timestamp=1_767_225_600.0, parts=parts,
                      usage={"input_tokens": 0, "cache_read_input_tokens": tokens_before,
                             "cache_creation_input_tokens": 40, "output_tokens": SUMMARY})
    steps = [PreviewStep("tool_result_budget", "Budget kept every result", False, tokens_before, tokens_before),
             PreviewStep("autocompact", f"Summarised 4 messages ({tokens_before:,} → {tokens_after:,} tokens)",
                         True, tokens_before, tokens_after, removed=4,
                         removed_tokens=tokens_before - before[-1].tokens)]
    return CompactionPreview("the parser", tokens_before, tokens_after, steps, c, summary_tokens=SUMMARY,
                             summary_source="the median of this session's 2 summaries", summary_usd=0.0414,
                             rewrite_tokens=2_100, next_call_usd=0.0338, saves_per_call_usd=0.0017,
                             payback_calls=19.9)


class Host(App):
    CSS_PATH = stylesheets("app.tcss", "inspector.tcss")

    def __init__(self, preview: bool = True) -> None:
        super().__init__()
        self.answer: list = []
        self.with_preview = preview

    def compose(self) -> ComposeResult:
        yield Static("host")

    def on_mount(self) -> None:
        p = a_preview()
        self.push_screen(InspectorScreen(p.compaction, preview=p if self.with_preview else None),
                         callback=self.answer.append)


def test_the_preview_text_says_each_layer_and_the_money():
    p = a_preview()
    b, a = p.tokens_before, p.tokens_after
    lines = preview_lines(p)
    assert lines[0].startswith(f"Compaction preview: {b:,} → {a:,} tokens, frees {b - a:,}.")
    assert any("tool_result_budget: would not act." in x for x in lines)
    assert any(f"autocompact: {b:,} → {a:,} tokens · removes 4 entries ({p.steps[1].removed_tokens:,} tokens)" in x
               for x in lines)
    money = money_lines(p)
    assert "summary: about 200 tokens (the median of this session's 2 summaries); its call $0.04" in money
    assert "cache: the next call writes 2,100 tokens it would have read" in money
    assert money[-1] == ("next call: $0.03 (summary call included) · each later call saves $0.0017 · "
                         "pays back in 19.9 calls")


def test_the_rereads_the_engine_priced_are_a_line_beside_the_money():
    """Issue 49 (7): a preview whose compaction would cost re-reads says them after the cost, saving
    and payback, in the engine's words (the loss report's and the inspector's); none priced, no line."""
    p = a_preview()
    assert not any("re-reads" in x for x in preview_lines(p))
    p.reread_usd, p.reread_tokens = 0.0262, 8_898
    line = "re-reads expected $0.026 (8.9k tokens of results)"
    assert line == reread_clause(0.0262, 8_898)
    assert money_lines(p)[-2].startswith("next call: ") and money_lines(p)[-1] == line
    assert preview_lines(p)[-1] == line                          # headless text: the same line
    d = p.to_dict()
    assert d["reread_usd"] == 0.0262 and d["reread_tokens"] == 8_898
    p.next_call_usd = p.reread_usd = None                        # the model's prices are not known
    assert money_lines(p)[-2:] == ["dollars: not known (this model's prices are not known)",
                                   "re-reads expected ? (8.9k tokens of results)"]


async def test_the_preview_screen_shows_the_rereads_in_the_cost_and_the_loss():
    p = a_preview()
    p.reread_usd, p.reread_tokens = 0.0262, 8_898
    p.compaction.cache = {"reason": "pays", "cost_usd": 0.0338, "saves_per_call_usd": 0.0017,
                          "calls_ahead": 20, "reread_usd": 0.0262, "lost_tokens": 8_898}

    class One(App):
        CSS_PATH = stylesheets("app.tcss", "inspector.tcss")

        def compose(self) -> ComposeResult:
            yield Static("host")

        def on_mount(self) -> None:
            self.push_screen(InspectorScreen(p.compaction, preview=p))

    app = One()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        cost = str(app.screen.query_one("#inspector-cost", Static).render())
        loss = str(app.screen.query_one("#inspector-loss", Static).render())
    line = reread_clause(0.0262, 8_898)
    assert cost.splitlines()[-1] == line
    assert f"1 file gone ({len(BODY) / 1000:.0f} KB) — {line}" in loss


def test_a_hostile_layer_action_is_shown_not_obeyed():
    p = a_preview()
    p.steps[1] = dataclasses.replace(p.steps[1], action="read \x1b]0;pwned\x07 x.py")
    assert "\x1b" not in "\n".join(preview_lines(p))


async def test_the_preview_screen_applies_with_a_and_closes_with_esc():
    for key, expected in (("a", True), ("escape", False)):
        app = Host()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            screen = app.screen
            assert screen.query_one("#inspector-dialog").border_title == "Compaction preview"
            assert "Press a to compact now" in str(screen.query_one("#inspector-keys", Static).render())
            await pilot.press(key)
            await pilot.pause()
        assert app.answer == [expected]


async def test_a_is_no_key_in_the_plain_inspector():
    app = Host(preview=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, InspectorScreen)
        await pilot.press("escape")
        await pilot.pause()
    assert app.answer == [False]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_preview_snapshot(snap_compare, utc, size):
    assert snap_compare(Host(), terminal_size=size)


def _seeded_session(ws) -> list[str]:
    base = ["--workspace", str(ws), "--model", "demo", "--allow", "all"]
    assert run_headless(["-p", "explore this repository, especially src/app.py", *base], user_dirs())[0] == 0
    assert run_headless(["-p", "how does it work?", "--continue", *base], user_dirs())[0] == 0
    return base


def _log_bytes(ws) -> dict:
    """Every file of ctxtui's state (session logs, transcripts, saved results) and its bytes."""
    home = Path(os.environ["CTXTUI_HOME"])
    return {str(p): p.read_bytes() for p in home.rglob("*") if p.is_file()}


def test_headless_preview_is_one_object_and_changes_no_file(tmp_path):
    ws = make_workspace(tmp_path)
    base = _seeded_session(ws)
    before = _log_bytes(ws)
    code, out, err = run_headless(["--continue", "--compact", "--preview", "the app", *base,
                                   "--output-format", "json"], user_dirs())
    assert code == 0, err
    objs = [json.loads(line) for line in out.splitlines()]
    assert len(objs) == 1
    d = objs[0]
    assert d["preview"] is True and d["type"] == "compaction_preview" and d["focus"] == "the app"
    assert d["acts"] and d["tokens_after"] < d["tokens_before"] and d["steps"]
    assert {"rewrite_tokens", "next_call_usd", "saves_per_call_usd", "payback_calls", "summary_tokens",
            "reread_usd", "reread_tokens", "parts", "session_id"} <= set(d)
    assert _log_bytes(ws) == before
    # the text format: its lines on stdout; then the real compaction still has everything to do
    code, out, err = run_headless(["--continue", "--compact", "--preview", *base], user_dirs())
    assert code == 0 and out.startswith("Compaction preview: "), (out, err)
    assert _log_bytes(ws) == before
    code, out, err = run_headless(["--continue", "--compact", "the app", *base, "--output-format", "json"],
                                  user_dirs())
    assert code == 0 and json.loads(out)["compactions"], err


@pytest.mark.parametrize("argv, says", [
    (["--preview"], "--preview shows what --compact would do: add --compact."),
    (["--continue", "--compact", "a", "--preview", "b"], "Give the focus once"),
], ids=["without-compact", "two-focuses"])
def test_headless_preview_usage_errors(tmp_path, argv, says):
    ws = make_workspace(tmp_path)
    code, _out, err = run_headless([*argv, "--workspace", str(ws), "--model", "demo"], user_dirs())
    assert code == 2 and says in err


async def test_slash_compact_preview_on_the_demo_model_then_apply(tmp_path):
    ws = make_workspace(tmp_path)
    await asyncio.to_thread(_seeded_session, ws)     # headless runs its own event loop
    config = load_config({"model": "demo", "continue_": True}, environ=user_dirs(), workspace=ws)
    agent = build_agent(config, interactive=True, continue_=True)
    app = CtxApp(agent)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        entries = [e.to_dict() for e in agent.entries]
        app.run_slash("/compact --preview the app")
        n = len(agent.compactions)
        await until(pilot, lambda: isinstance(app.screen, InspectorScreen), "the preview screen")
        assert app.screen.preview is not None and app.screen.preview.focus == "the app"
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, InspectorScreen), "the preview to close")
        await pilot.pause(0.2)
        assert [e.to_dict() for e in agent.entries] == entries and len(agent.compactions) == n
        app.run_slash("/compact --preview the app")
        await until(pilot, lambda: isinstance(app.screen, InspectorScreen), "the preview screen")
        await pilot.press("a")
        await until(pilot, lambda: len(agent.compactions) > n and not app.busy, "the compaction", 20)
        assert [e.to_dict() for e in agent.entries] != entries
