"""The cache doctor on screen and headless (issue 27): a request that read short of the cache is a
line in the conversation saying where its prefix changed and why, a `[cache]` note in text, a
`cache_miss` event in stream-json and a `cache_misses` list in json. Driven on the demo model,
whose cache goes cold after `/wait` and is rewritten by `/compact` or its compact tool."""
from __future__ import annotations

import io
import json

import pytest

from agent_core import events as ev
from agent_core.config import load_config
from agent_core.loop.factory import build_agent
from app.cli.headless import main as headless_main
from app.cli.main import build_parser
from app.tui.app import CtxApp
from app.tui.widgets.conversation.notice_message import NoticeRecord
from tests.agent_helpers import make_workspace, user_dirs
from tests.app.snapshot_helpers import fill, settled
from tests.pilot_until import until
from tests.tui_fakes import FIXED_TIME, FakeAgent

MISS = ev.CacheMiss(request=7, read=1_496, expected=41_620, short=40_124, where="message 1", why="compaction rewrite",
                    model="claude-sonnet-4-5",
                    text="request 7 read 1,496 of 41,620 cached tokens: changed at message 1 (compaction rewrite)")


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_cache_miss_line_snapshot(snap_compare, utc, size):
    app = CtxApp(FakeAgent(), clock=lambda: FIXED_TIME)

    async def run_before(pilot):
        await fill(app, "ok", pilot)
        await app.handle_event(MISS)
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


async def prompt(pilot, app, text: str) -> None:
    """Send `text` as the prompt and wait for its turn to end."""
    n = app.agent.turns
    app.run_prompt(text)
    await until(pilot, lambda: app.agent.turns > n and not app.busy, "the turn", 20)


def notices(app) -> list[str]:
    return [r.text for r in app.conversation.records_of(NoticeRecord)]


async def test_on_the_demo_model_a_wait_and_a_compaction_are_each_named(tmp_path):
    ws = make_workspace(tmp_path)
    config = load_config({"model": "demo", "allow": "all"}, environ=user_dirs(), workspace=ws)
    app = CtxApp(build_agent(config, interactive=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await prompt(pilot, app, "explore this repository, especially src/app.py")
        await prompt(pilot, app, "how does it work?")
        assert not [n for n in notices(app) if n.startswith("Cache: ")]
        app.run_slash("/wait 10m")
        await prompt(pilot, app, "and the tests?")
        await until(pilot, lambda: any("(TTL expired)" in n for n in notices(app)), "the TTL line")
        n = len(app.agent.compactions)
        app.run_slash("/compact")
        await until(pilot, lambda: not app.busy and len(app.agent.compactions) > n, "the compaction", 20)
        await prompt(pilot, app, "go on")
        await until(pilot, lambda: any("changed at message 1 (compaction rewrite)" in n for n in notices(app)),
                    "the rewrite line")
        lines = [n for n in notices(app) if n.startswith("Cache: request ")]
    assert len(lines) == 2, lines


def run_stream(ws, fmt: str, *prompts: str) -> str:
    """`ctxtui --headless --input-format stream-json` on the demo model: one process, these prompts."""
    lines = "".join(json.dumps({"type": "user", "message": {"role": "user", "content": p}}) + "\n" for p in prompts)
    args = build_parser().parse_args(["--headless", "--workspace", str(ws), "--model", "demo", "--allow", "all",
                                      "--input-format", "stream-json", "--output-format", fmt])
    out, err = io.StringIO(), io.StringIO()
    code = headless_main(args, stdin=io.StringIO(lines), stdout=out, stderr=err, environ=user_dirs())
    assert code == 0, err.getvalue()
    return out.getvalue() + err.getvalue()


PROMPTS = ("explore this repository, especially src/app.py", "how does it work?",
           "compact the conversation, focusing on src/app.py")    # the demo calls its compact tool


def test_headless_json_lists_the_misses_of_each_turn(tmp_path):
    ws = make_workspace(tmp_path)
    objs = [json.loads(line) for line in run_stream(ws, "stream-json", *PROMPTS).splitlines() if line.startswith("{")]
    events = [o for o in objs if o["type"] == "cache_miss"]
    assert len(events) == 1
    assert (events[0]["why"], events[0]["where"]) == ("compaction rewrite", "message 1")
    assert events[0]["read"] < events[0]["expected"]
    ws2 = make_workspace(tmp_path / "again")
    turns = [json.loads(line) for line in run_stream(ws2, "json", *PROMPTS).splitlines() if line.startswith("{")]
    assert [len(t["cache_misses"]) for t in turns] == [0, 0, 1]
    assert {k for k in turns[-1]["cache_misses"][0]} >= {"request", "read", "expected", "short", "where", "why"}
    text = run_stream(make_workspace(tmp_path / "text"), "text", *PROMPTS)
    assert "[cache] request " in text and "changed at message 1 (compaction rewrite)" in text
