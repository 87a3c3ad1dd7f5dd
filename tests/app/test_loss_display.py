"""What a compaction lost, on screen (issue 27): the marker says it in one line and the inspector
lists the prompts dropped, the files gone and the names no longer in the context; headless JSON
carries the report in the compaction event's parts. Snapshots of the inspector at 80×24 and 120×40
(fixed entries, fixed uuids)."""
from __future__ import annotations

import dataclasses
import json

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from agent_core import events as ev
from agent_core.loop.compaction_parts import compaction_parts
from app.stylesheets import stylesheets
from app.tui.screens.inspector import InspectorScreen, loss_lines, weighed_line
from app.tui.widgets.conversation.compaction_marker import MarkerRecord
from compaction.cache_economics import reread_clause
from compaction.entry import assistant, tool_result_block, user
from compaction.loss_report import loss_report
from tests.agent_helpers import make_workspace, user_dirs
from tests.app.hostile import BAD_MARKUP, CLEAR, CLICK, TITLE, assert_clean, terminal_text
from tests.headless_helpers import run_headless


BODY = "def parse_header(x):\n    return x\n" * 40
STARTS = "␛]0;TITLE␇"    # hostile.TITLE as it must read


def fixed(e, n: int):
    return dataclasses.replace(e, uuid=f"{n:08d}-0000-4000-8000-000000000000")


def a_compaction() -> ev.Compaction:
    before = [fixed(user("Refactor src/parse_header.py so parse_header handles ISSUE-42; keep the timeout at 1500"), 1),
              fixed(assistant([{"type": "tool_use", "id": "t1", "name": "read_file",
                                "input": {"path": "src/parse_header.py"}}], response_id="r1"), 2),
              fixed(user([tool_result_block("t1", BODY)]), 3),
              fixed(assistant("I read it; the header parser needs a rewrite.", response_id="r2"), 4),
              fixed(user("go on"), 5)]
    after = [fixed(user("Summary: the user wants parse_header refactored; timeout 1500.", kind="summary"), 6),
             before[-1]]
    parts = compaction_parts(before, after, ["autocompact"])
    parts["loss"] = loss_report(before, after)
    return ev.Compaction(layer="autocompact", trigger="manual", tokens_before=9_000, tokens_after=1_200,
                         duration_s=2.5, timestamp=1_767_225_600.0, parts=parts)


class Host(App):
    CSS_PATH = stylesheets("app.tcss", "inspector.tcss")

    def compose(self) -> ComposeResult:
        yield Static("host")

    def on_mount(self) -> None:
        self.push_screen(InspectorScreen(a_compaction()))


def test_the_marker_says_what_was_lost_in_one_line():
    text = MarkerRecord.of(a_compaction()).content().plain
    line = next(t for t in text.splitlines() if t.strip().startswith("lost:"))
    assert "prompts 1 kept, 0 quoted, 1 dropped" in line and "1 file gone" in line and "recall" in line


async def test_the_inspector_lists_the_losses():
    app = Host()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = str(app.screen.query_one("#inspector-loss", Static).render())
        assert "prompt dropped: Refactor src/parse_header.py" in text
        assert f"file gone: src/parse_header.py ({len(BODY):,} chars)" in text
        assert "no longer in the context: src/parse_header.py, ISSUE-42" in text


REREADS = {"reason": "pays", "cost_usd": 0.011, "saves_per_call_usd": 0.0029, "calls_ahead": 6,
           "reread_usd": 0.026202, "lost_tokens": 8_898}     # what session memory priced (Verdict.details)


class Inspect(App):
    CSS_PATH = stylesheets("app.tcss", "inspector.tcss")

    def __init__(self, c: ev.Compaction) -> None:
        super().__init__()
        self.c = c

    def compose(self) -> ComposeResult:
        yield Static("host")

    def on_mount(self) -> None:
        self.push_screen(InspectorScreen(self.c))


async def test_the_rereads_the_engine_priced_go_beside_the_files_gone():
    """Issue 49 (7): a compaction whose `details["cache"]` priced re-reads: the loss report in the
    inspector and on the marker puts the figure beside the files gone, in the same words as the
    inspector's weighed line (one function, the engine's, says it)."""
    c = dataclasses.replace(a_compaction(), cache=dict(REREADS))
    said = reread_clause(0.026202, 8_898)
    assert said == "re-reads expected $0.026 (8.9k tokens of results)"
    beside = f"1 file gone ({len(BODY) / 1000:.1f} KB) — {said}"
    marker = next(t for t in MarkerRecord.of(c).content().plain.splitlines() if t.strip().startswith("lost:"))
    assert beside in marker
    app = Inspect(c)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        loss = str(app.screen.query_one("#inspector-loss", Static).render())
        cost = str(app.screen.query_one("#inspector-cost", Static).render())
    assert beside in loss.splitlines()[0]
    assert cost.splitlines()[-1] == weighed_line(c.cache) == f"weighed: saves $0.02 over 6 calls against {said}"
    # nothing priced: no figure; priced but no file gone (command output removed): its own part
    assert "re-reads" not in loss_lines(c.parts["loss"], {"reason": "pays", "cost_usd": 0.01})
    no_files = {**c.parts["loss"], "files_gone": [], "files_gone_count": 0, "files_gone_chars": 0}
    assert f" · {said} · " in loss_lines(no_files, c.cache)


def test_the_marker_says_the_rereads_once():
    """An early session-memory compaction's action already ends with the engine's clause: the
    marker's loss line does not repeat it."""
    said = reread_clause(0.026202, 8_898)
    c = dataclasses.replace(a_compaction(), cache=dict(REREADS), layer="session_memory",
                            action=f"Replaced 3 older entries by the session notes; under the threshold because "
                                   f"it pays: rewrote 4.1k cached tokens, $0.011; saves $0.0029 per call; {said}")
    assert MarkerRecord.of(c).content().plain.count(said) == 1


async def test_a_hostile_file_name_in_the_loss_list_stays_text():
    """A file gone whose name holds escapes and markup, beside the re-reads: shown, never obeyed."""
    c = dataclasses.replace(a_compaction(), cache=dict(REREADS))
    loss = dict(c.parts["loss"])
    loss["files_gone"] = [[f"src/{TITLE}{CLICK}.py", 120], [f"{BAD_MARKUP}{CLEAR}.py", 80]]
    loss["files_gone_count"] = 3
    c.parts = {**c.parts, "loss": loss}
    app = Inspect(c)
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.pause()
        shown = terminal_text(app)
    assert_clean(shown)
    beside = f"3 files gone ({len(BODY) / 1000:.1f} KB) — {reread_clause(0.026202, 8_898)}"
    for needle in (f"file gone: src/{STARTS}{CLICK}.py (120 chars)", f"file gone: {BAD_MARKUP}␛[2J.py (80 chars)",
                   "… and 1 more files", beside):
        assert needle in shown, needle


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_inspector_snapshot_with_a_loss_report(snap_compare, utc, size):
    assert snap_compare(Host(), terminal_size=size)


def test_headless_compaction_events_carry_the_loss_report(tmp_path):
    """Two prompts on the demo model, then `--continue --compact`: the compaction event's parts hold
    the report, with the first prompt's names checked against what the summary kept."""
    ws = make_workspace(tmp_path)
    base = ["--workspace", str(ws), "--model", "demo", "--allow", "all"]
    assert run_headless(["-p", "explore this repository, especially src/app.py and ISSUE-42", *base],
                        user_dirs())[0] == 0
    assert run_headless(["-p", "how does it work?", "--continue", *base], user_dirs())[0] == 0
    code, out, err = run_headless(["--continue", "--compact", "the app", *base, "--output-format", "stream-json"],
                                  user_dirs())
    assert code == 0, err
    comps = [d for d in map(json.loads, out.splitlines()) if d["type"] == "compaction"]
    loss = comps[-1]["parts"]["loss"]
    assert {"prompts", "files_gone", "results_cleared", "missing", "recall"} <= set(loss)
    assert loss["prompts"]["total"] == 2 and loss["named"] >= 2
    assert loss["recall"] is not None and 0 <= loss["recall"] <= 1
