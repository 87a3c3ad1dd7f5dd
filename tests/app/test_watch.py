"""`ctxtui watch`: the state over appended records (no screen), the CLI, the live screen (Pilot)
and its look (snapshot). Every log is written here: Claude Code's shape with the writers of
tests/log_helpers.py, ctxtui's with the real SessionLog writer.

Waits are bounded polls for a condition (a generous deadline for correctness, never a timing check).
"""
from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path

import pytest

from agent_core import events as ev
from agent_core.sessions.paths import project_state_dir
from agent_core.sessions.session_log import SessionLog
from agent_core.watch.files import watch_changes
from agent_core.watch.state import WatchState
from agent_core.watch.target import WatchError, WatchTarget, resolve_target, switch_candidate
from app.cli.watch import main as watch_main
from compaction.accounting.budget import ContextBudget
from compaction.entry import assistant as entry_assistant, user as entry_user
from tests.app.snapshot_helpers import settled
from tests.app.watch_helpers import DEADLINE, SIZE, make_app, until
from tests.log_helpers import MODEL, assistant, boundary, usage, user, write_log

SESSION = "5f1e2d3c-0000-4000-8000-000000000001"
CTX_SESSION = "20250614T100000-abcdef"


def append(path: Path, *records, raw: str = "") -> None:
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
        f.write(raw)


def summary(uuid="s1", ts="2025-06-14T11:00:01Z"):
    return user("This session is being continued from a previous conversation...", uuid=uuid, ts=ts,
                session=SESSION, isCompactSummary=True, isVisibleInTranscriptOnly=True)


def cc(mid, *, read=0, write=0, inp=10, out=200, ts="2025-06-14T10:00:00Z", block="text", **kw):
    return assistant(mid, f"req-{mid}", u=usage(inp, out, write=write, read=read), ts=ts, session=SESSION,
                     block=block, **kw)


def cc_log(tmp_path: Path) -> Path:
    """Two responses (the first split over two content-block records) and one corrupt line."""
    path = tmp_path / "projects" / "-home-me-proj" / f"{SESSION}.jsonl"
    write_log(path, [user("explore the project", session=SESSION, uuid="u1"),
                     cc("m1", write=30_000, ts="2025-06-14T10:00:00Z"),
                     cc("m1", write=30_000, ts="2025-06-14T10:00:00Z", block="tool_use"),
                     user("ok", session=SESSION, uuid="u2", ts="2025-06-14T10:01:00Z"),
                     cc("m2", read=30_000, write=12_000, ts="2025-06-14T10:30:00Z")],
              tail='{"type":"assistant","message":{"usage":\n')
    return path


def ctxtui_log(tmp_path: Path, *, model=MODEL, config=None) -> tuple[Path, SessionLog]:
    log = SessionLog.create(tmp_path, {"model": model, "workspace": str(tmp_path),
                                       "config": {"model": model, "context_window": None, "max_output_tokens": 32_000,
                                                  "disable_autocompact": False, "autocompact_pct": None,
                                                  **(config or {})}},
                            session_id=CTX_SESSION, now=1_749_895_200)
    log.append_entry(entry_user("hello"))
    return log.path, log


def ctx_answer(log: SessionLog, rid: str, **u) -> None:
    log.append_entry(entry_assistant("done", response_id=rid, usage=usage(**u), model=log_model(log)))


def tool_call(mid: str, name: str, tool_input: dict) -> dict:
    rec = cc(mid, block="tool_use")
    rec["message"]["content"] = [{"type": "tool_use", "id": f"tu-{mid}", "name": name, "input": tool_input}]
    return rec


def log_model(log: SessionLog) -> str:
    return json.loads(log.path.read_text().splitlines()[0])["model"]


# ================================================================== WatchState (no screen)

def test_initial_read_counts_each_response_once_and_skips_corrupt_lines(tmp_path):
    s = WatchState(cc_log(tmp_path))
    up = s.poll()
    assert up.records == 2 and s.responses == 2
    assert s.skipped == 1 and s.first_corrupt_line == 6
    assert s.model == MODEL and s.format == "claude_code"
    row = up.cost.by_model[MODEL]
    assert row["cache_write_5m"] == 42_000 and row["cache_read"] == 30_000 and row["requests"] == 2
    # Context as Claude Code shows it: the last request's input + cache writes + cache reads; the
    # answer's 200 output tokens are apart (issue 15).
    assert up.context.tokens == 10 + 12_000 + 30_000
    assert up.context.categories["cache_read"] == 30_000 and up.context.categories["cache_write"] == 12_000
    assert "output" not in up.context.categories and s.last_output == 200


def test_context_thresholds_are_the_loops_for_the_model(tmp_path):
    s = WatchState(cc_log(tmp_path))
    s.poll()
    expected = ContextBudget(context_window=200_000, max_output_tokens=64_000)
    c = s.context_event()
    assert (c.window, c.threshold, c.warning, c.error, c.blocking) == (
        200_000, expected.autocompact_threshold, expected.warning_threshold, expected.error_threshold,
        expected.blocking_limit)
    for tokens in (100_000, 150_000, 160_000, 170_000, 185_000):
        append(s.path, cc(f"t{tokens}", read=tokens - 10))
        c = s.poll().context
        assert c.tokens == tokens and c.state == expected.state(tokens)
        assert c.percent_left == round(expected.percent_left(tokens), 1)


def test_thresholds_follow_a_model_change(tmp_path):
    path = write_log(tmp_path / "s.jsonl", [cc("m1", read=100_000)])
    s = WatchState(path)
    before = s.poll().context.threshold
    append(path, cc("m2", read=100_000, model="claude-3-5-haiku-20241022"))   # 8,192 max output: a smaller reserve
    after = s.poll().context
    assert s.model == "claude-3-5-haiku-20241022"
    assert after.threshold == ContextBudget(context_window=200_000, max_output_tokens=8_192).autocompact_threshold
    assert after.threshold != before


def test_context_window_override(tmp_path):
    s = WatchState(cc_log(tmp_path), context_window=1_000_000)
    c = s.poll().context
    assert c.window == 1_000_000 and s.info.window_source == "override"
    assert c.threshold == ContextBudget(context_window=1_000_000, max_output_tokens=64_000).autocompact_threshold


def test_poll_returns_only_what_was_appended_and_completes_a_half_written_line(tmp_path):
    path = cc_log(tmp_path)
    s = WatchState(path)
    s.poll()
    assert s.poll().records == 0 and not s.poll().changed
    line = json.dumps(cc("m3", read=50_000))
    append(path, raw="\n" + line[:40])        # close the corrupt line; half of the next one
    up = s.poll()
    assert up.records == 0 and up.context is None
    append(path, raw=line[40:] + "\n")
    up = s.poll()
    assert up.records == 1 and up.context.tokens == 50_010 and s.responses == 3


def test_claude_code_compaction_lands_then_gets_its_tokens_after(tmp_path):
    path = cc_log(tmp_path)
    s = WatchState(path)
    s.poll()
    append(path, boundary(158_000, session=SESSION, ts="2025-06-14T11:00:00Z"), summary())
    up = s.poll()
    assert [(v.tokens_before, v.tokens_after, v.new, v.trigger) for v in up.compactions] == [
        (158_000, None, True, "auto")]
    assert up.context is None                      # the count after is not known yet
    append(path, cc("m9", read=0, write=20_000, ts="2025-06-14T11:00:05Z"))
    up = s.poll()
    (v,) = up.compactions
    # as Claude Code shows it: what the next request held, its output apart
    assert (v.key, v.tokens_before, v.tokens_after, v.new) == ("b1", 158_000, 20_010, False)
    assert up.context.tokens == 20_010
    assert s.history_points()[-1] == (3, 20_010, True)       # the plot marks the compaction
    assert len(s.compactions) == 1


def test_sidechain_records_cost_but_do_not_move_the_main_context(tmp_path):
    path = cc_log(tmp_path)
    s = WatchState(path)
    tokens = s.poll().context.tokens
    append(path, cc("side1", read=90_000, model="claude-haiku-4-5-20251001", isSidechain=True))
    up = s.poll()
    assert up.context is None and s.tokens == tokens
    assert up.cost.by_model["claude-haiku-4-5-20251001"]["cache_read"] == 90_000
    assert set(up.cost.by_purpose) == {"main", "subagent"}


def test_subagent_logs_are_followed_as_they_appear(tmp_path):
    path = cc_log(tmp_path)
    s = WatchState(path)
    s.poll()
    sub = path.with_suffix("") / "subagents" / "agent-a1.jsonl"
    write_log(sub, [cc("sub1", read=5_000, isSidechain=True, agentId="a1")], tail="garbage\n")
    up = s.poll()
    assert s.subagent_logs == 1 and up.records == 1 and s.skipped == 2
    assert up.cost.by_purpose["subagent"]["cache_read"] == 5_000


def test_cost_dollars_by_bucket_add_up_and_unknown_models_keep_tokens(tmp_path):
    path = write_log(tmp_path / "s.jsonl", [
        cc("m1", inp=1_000, out=2_000, write=3_000, read=40_000),
        assistant("x1", "rx", u=usage(100, 50), model="acme-unknown-1", session=SESSION)])
    s = WatchState(path)
    cost = s.poll().cost
    row = cost.by_model[MODEL]
    assert sum(row["usd_by_bucket"].values()) == pytest.approx(row["cost_usd"])
    assert row["usd_by_bucket"]["output"] > 0 and row["usd_by_bucket"]["cache_write_1h"] == 0
    unknown = cost.by_model["acme-unknown-1"]
    assert unknown["cost_usd"] is None and unknown["input"] == 100 and "usd_by_bucket" not in unknown
    assert cost.total_usd is None
    assert s.cost_extras()["cache_hit_rate"] == pytest.approx(40_000 / 44_100)


def test_ctxtui_log_uses_the_session_config_and_its_compaction_counts(tmp_path):
    path, log = ctxtui_log(tmp_path, model="demo")
    ctx_answer(log, "r1", inp=2_000, out=500, read=20_000)
    s = WatchState(path)
    c = s.poll().context
    assert s.format == "ctxtui" and s.model == "demo"
    assert c.window == 30_000 and s.info.window_source == "demo"     # the demo's window, as the loop uses
    assert c.tokens == 22_500 and c.threshold == ContextBudget(context_window=30_000).autocompact_threshold
    assert s.cost.event().by_model["demo"]["cost_usd"] > 0        # priced for illustration, as the TUI does
    log.append_event(ev.Compaction(layer="autocompact", trigger="auto", tokens_before=22_500, tokens_after=6_000,
                                   duration_s=1.5, timestamp=time.time()))
    up = s.poll()
    (v,) = up.compactions
    assert (v.layer, v.trigger, v.tokens_before, v.tokens_after, v.new) == ("autocompact", "auto", 22_500, 6_000, True)
    used = {k: v for k, v in up.context.categories.items() if k not in ("free", "autocompact_buffer")}
    assert up.context.tokens == 6_000 and up.context.source == "estimate" and sum(used.values()) == 6_000
    assert s.history_points()[-1] == (1, 6_000, True)
    ctx_answer(log, "r2", inp=500, out=100, read=6_000)
    log.append_event(ev.AssistantDone(message_id="r2", model="demo", usage=usage(500, 100, read=6_000),
                                      stop_reason="end_turn"))       # the same response again: counted once
    assert s.poll().context.tokens == 6_600 and s.responses == 2
    log.close()


def test_ctxtui_session_config_window_and_autocompact_switch(tmp_path):
    path, log = ctxtui_log(tmp_path, config={"context_window": 50_000, "disable_autocompact": True})
    ctx_answer(log, "r1", inp=100, out=10)
    s = WatchState(path)
    c = s.poll().context
    b = ContextBudget(context_window=50_000, max_output_tokens=32_000, autocompact_enabled=False)
    assert (c.window, c.threshold, s.info.window_source) == (50_000, b.autocompact_threshold, "session config")
    log.close()


# ---- which file

def test_resolve_target_file_folder_and_errors(tmp_path):
    old = write_log(tmp_path / "p" / "old.jsonl", [cc("m1")])
    new = write_log(tmp_path / "p" / "new.jsonl", [cc("m2")])
    write_log(tmp_path / "p" / "new" / "subagents" / "agent-1.jsonl", [cc("s1")])   # never picked on its own
    os.utime(old, (1, 1))
    assert resolve_target(str(old)) == WatchTarget(old.resolve())
    t = resolve_target("p", cwd=tmp_path)
    assert t.log == new.resolve() and t.folder == (tmp_path / "p").resolve()
    with pytest.raises(WatchError, match="no such file or folder"):
        resolve_target(str(tmp_path / "missing.jsonl"))
    (tmp_path / "empty").mkdir()
    waiting = resolve_target(str(tmp_path / "empty"))          # waited on, not an error
    assert waiting.log is None and waiting.folder == (tmp_path / "empty").resolve()
    assert waiting.waiting[-1] == waiting.folder


def test_default_is_ctxtui_sessions_here_else_claude_projects(tmp_path):
    claude = tmp_path / "cfg"
    cc_file = write_log(claude / "projects" / "-p" / f"{SESSION}.jsonl", [cc("m1")])
    env = {"CLAUDE_CONFIG_DIR": str(claude)}
    t = resolve_target(None, cwd=tmp_path / "ws", env=env)
    assert t.log == cc_file.resolve() and t.folder == (claude / "projects").resolve()
    (tmp_path / "ws").mkdir()
    env["CTXTUI_HOME"] = str(tmp_path / "state")
    path, log = ctxtui_log(project_state_dir(tmp_path / "state", (tmp_path / "ws").resolve()))
    log.close()
    assert resolve_target(None, cwd=tmp_path / "ws", env=env).log == path.resolve()
    nothing = resolve_target(None, cwd=tmp_path / "elsewhere", env={"CLAUDE_CONFIG_DIR": str(tmp_path / "none"),
                                                                     "CTXTUI_HOME": str(tmp_path / "state")})
    assert nothing.log is None and nothing.waiting[-1] == tmp_path / "none" / "projects"   # waited on


def test_switch_candidate(tmp_path):
    cur = write_log(tmp_path / "a.jsonl", [cc("m1")])
    other = write_log(tmp_path / "b.jsonl", [cc("m2")])
    sub = write_log(tmp_path / "a" / "subagents" / "agent-1.jsonl", [cc("s")])
    tr = write_log(tmp_path / "b" / "transcripts" / "t.jsonl", [cc("t")])
    assert switch_candidate({str(cur), str(sub), str(tr)}, current=cur, followed={cur}) is None
    assert switch_candidate({str(cur), str(other)}, current=cur, followed={cur}) == other
    assert switch_candidate({str(other)}, current=cur, followed={cur, other}) is None    # never back


async def test_watch_changes_reports_an_append_and_stops(tmp_path):
    path = write_log(tmp_path / "s.jsonl", [cc("m1")])
    stop = asyncio.Event()
    seen: list[set[str]] = []

    async def consume():
        async for changed in watch_changes(tmp_path, recursive=False, stop_event=stop):
            seen.append(changed)
            if str(path) in changed:
                stop.set()

    task = asyncio.create_task(consume())
    deadline = time.monotonic() + DEADLINE
    while not task.done() and time.monotonic() < deadline:
        append(path, cc(f"m{len(seen)}"))      # until the watcher (started inside the task) sees one
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(task, DEADLINE)
    assert any(str(path) in s for s in seen)


# ================================================================== CLI

def test_help_describes_every_flag(capsys):
    assert watch_main(["--help"]) == 0
    out = capsys.readouterr().out
    for needle in ("PATH", "--context-window", "--poll", "CLAUDE_CONFIG_DIR", "exit codes"):
        assert needle in out
    assert ".ctxtui/" not in out and "state folder" in out     # logs live in the state folder, not the workspace


@pytest.mark.parametrize("argv, needle", [
    (["/no/such/log.jsonl"], "no such file or folder"),
    (["--context-window", "12"], "not a context window"),
    (["--bogus"], "unrecognized arguments"),
])
def test_bad_usage_exits_2_with_a_message(argv, needle, capsys):
    assert watch_main(argv) == 2
    assert needle in capsys.readouterr().err


# ================================================================== the screen (Pilot)

def text_of(widget) -> str:
    return str(widget.render())


async def test_claude_code_log_appends_update_the_panes(tmp_path):
    from app.watch.header import WatchHeader

    path = tmp_path / f"{SESSION}.jsonl"
    write_log(path, [user("explore", session=SESSION, uuid="u1")])
    app = make_app(WatchTarget(path), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        scr = app.watch_screen
        await until(pilot, scr.loaded.is_set, "the loaded log")
        assert scr.context_pane.context is None and scr.cost_pane.cost is None
        assert "no model calls yet" in text_of(scr.cost_pane.query_one("#cost-summary"))

        append(path, cc("m1", write=40_000), cc("m1", write=40_000, block="tool_use"),
               user("next", session=SESSION, uuid="u2"), cc("m2", read=40_000, write=120_000))
        await until(pilot, lambda: scr.context_pane.context is not None and scr.context_pane.context.tokens == 160_010,
                    "the second response's context")
        numbers = text_of(scr.context_pane.query_one("#ctx-numbers"))
        assert "160,010" in numbers and "200,000" in numbers
        assert scr.context_pane.state == "error"         # 157,000 <= 160,010 < 167,000
        cost = scr.cost_pane.cost
        assert cost.by_model[MODEL]["cache_write_5m"] == 160_000 and cost.total_usd > 0
        assert scr.cost_pane.query_one("#cost-table").row_count >= 2
        header = text_of(scr.query_one(WatchHeader))
        assert f"{SESSION}.jsonl" in header and MODEL in header and "2 responses" in header

        append(path, boundary(160_210, session=SESSION), summary())
        await until(pilot, lambda: scr.timeline.row_count == 1, "the compaction row")
        row = [str(c) for c in scr.timeline.get_row("b1")]
        assert row[1:5] == ["compact", "auto", "160k", "…"]

        append(path, cc("m3", write=25_000, ts="2025-06-14T11:00:05Z"))
        await until(pilot, lambda: scr.context_pane.context.tokens == 25_010, "the context after compaction")
        row = [str(c) for c in scr.timeline.get_row("b1")]
        assert row[3:] == ["160k", "25k", "135k"] and scr.timeline.row_count == 1
        assert scr.context_pane.state == "ok" and scr.context_pane.history[-1] == (3, 25_010, True)

        append(path, raw="{not json\n")
        await until(pilot, lambda: "1 corrupt" in text_of(scr.query_one(WatchHeader)), "the corrupt-line warning")

        await pilot.press("c")                   # the cost pane maximized, as /cost does in the TUI
        assert scr.maximized is scr.cost_pane
        await pilot.press("c")
        assert scr.maximized is None


async def test_ctxtui_session_log_appends_update_the_panes(tmp_path):
    path, log = ctxtui_log(tmp_path)
    app = make_app(WatchTarget(path), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        scr = app.watch_screen
        await until(pilot, scr.loaded.is_set, "the loaded log")
        ctx_answer(log, "r1", inp=5_000, out=1_000, write=100_000, read=50_000)
        await until(pilot, lambda: scr.context_pane.context is not None, "the first context")
        assert scr.context_pane.context.tokens == 156_000 and scr.context_pane.state == "warning"
        assert scr.cost_pane.cost.by_model[MODEL]["cost_usd"] > 0
        log.append_event(ev.Compaction(layer="autocompact", trigger="auto", tokens_before=156_000,
                                       tokens_after=12_000, duration_s=2.0, timestamp=time.time()))
        await until(pilot, lambda: scr.timeline.row_count == 1, "the compaction row")
        assert [str(c) for c in scr.timeline.get_row_at(0)][1:] == ["autocompact", "auto", "156k", "12k", "144k"]
        assert scr.context_pane.context.tokens == 12_000 and scr.context_pane.state == "ok"
        ctx_answer(log, "r2", inp=1_000, out=200, read=12_000)
        await until(pilot, lambda: scr.context_pane.context.tokens == 13_200, "the next response")
        assert scr.cost_pane.cost.by_model[MODEL]["requests"] == 2
    log.close()


async def test_a_newer_session_in_the_folder_is_switched_to(tmp_path):
    folder = tmp_path / "projects"
    first = write_log(folder / "-p" / "a.jsonl", [cc("m1", read=90_000)])
    app = make_app(resolve_target(str(folder)), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        scr = app.watch_screen
        await until(pilot, lambda: scr.loaded.is_set() and scr.context_pane.context is not None, "the first log")
        assert scr.state.path == first.resolve()
        second = write_log(folder / "-q" / "b.jsonl", [cc("n1", read=10_000)])
        await until(pilot, lambda: scr.state.path == second.resolve() and scr.loaded.is_set()
                    and scr.context_pane.context is not None and scr.context_pane.context.tokens == 10_010,
                    "the newer session")
        assert any("newer session" in n.message for n in app._notifications)
        append(first, cc("m2", read=95_000))                   # the old one keeps going: no switch back
        append(second, cc("n2", read=11_000))
        await until(pilot, lambda: scr.context_pane.context.tokens == 11_010, "the newer session's next response")
        assert scr.state.path == second.resolve()


async def test_the_existing_log_is_read_in_a_thread(tmp_path, monkeypatch):
    path = cc_log(tmp_path)
    threads: list[str] = []
    poll = WatchState.poll

    def spy(self):
        threads.append(threading.current_thread().name)
        return poll(self)

    monkeypatch.setattr(WatchState, "poll", spy)
    app = make_app(WatchTarget(path), tmp_path, live=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, app.watch_screen.loaded.is_set, "the loaded log")
        assert app.watch_screen.context_pane.context.tokens == 42_010
    assert threads and threads[0] != threading.main_thread().name


async def test_the_activity_feed_shows_a_prompt_and_tool_calls_appended_after_start(tmp_path):
    path = write_log(tmp_path / f"{SESSION}.jsonl", [user("first question", session=SESSION, uuid="u1")])
    app = make_app(WatchTarget(path), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        scr = app.watch_screen
        await until(pilot, scr.loaded.is_set, "the loaded log")
        assert "first question" in text_of(scr.activity)
        append(path, user("run the tests", session=SESSION, uuid="u2"),
               tool_call("m1", "Bash", {"command": "pytest -q tests/app"}),
               user([{"type": "tool_result", "tool_use_id": "tu-m1", "content": "12 passed"}], session=SESSION,
                    uuid="u3"))
        await until(pilot, lambda: "pytest -q tests/app" in text_of(scr.activity), "the tool call")
        feed = text_of(scr.activity)
        assert "› run the tests" in feed and "first question" not in feed and "Bash" in feed
        assert "12 passed" not in feed                      # a tool result is no prompt
        for i in range(2, 6):
            append(path, tool_call(f"m{i}", "Read", {"file_path": f"/src/f{i}.py"}))
        await until(pilot, lambda: "/src/f5.py" in text_of(scr.activity), "the fifth tool call")
        feed = text_of(scr.activity)
        assert "2 earlier tool calls" in feed and "/src/f2.py" not in feed and "/src/f3.py" in feed


async def test_an_empty_folder_is_waited_on_until_a_log_appears(tmp_path):
    from app.watch.header import WatchHeader

    projects = tmp_path / "projects"
    projects.mkdir()
    env = {"CTXTUI_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    target = resolve_target(str(projects), env=env)
    assert target.log is None
    app = make_app(target, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        scr = app.watch_screen
        await until(pilot, lambda: scr.phase == "waiting", "the wait")
        header = text_of(scr.query_one(WatchHeader))
        assert "waiting for a session log" in header and "projects" in header and "start Claude Code" in header
        assert scr.state is None and not scr.loaded.is_set()
        log = write_log(projects / "-home-me-p" / f"{SESSION}.jsonl",
                        [user("hello", session=SESSION, uuid="u1"), cc("m1", read=30_000, write=2_000)])
        await until(pilot, lambda: scr.loaded.is_set() and scr.context_pane.context is not None, "the new log")
        assert scr.state.path == log.resolve() and scr.context_pane.context.tokens == 32_010   # 10 + 30k + 2k
        assert "› hello" in text_of(scr.activity)
        assert any("session log appeared" in n.title for n in app._notifications)
        append(log, cc("m2", read=32_000, write=1_000))
        await until(pilot, lambda: scr.context_pane.context.tokens == 33_010, "the next response")


async def test_a_ctxtui_log_shows_the_tuis_breakdown_and_cost_pane(tmp_path):
    path, log = ctxtui_log(tmp_path)                     # meta, then the user entry "hello"
    app = make_app(WatchTarget(path), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        scr = app.watch_screen
        await until(pilot, scr.loaded.is_set, "the loaded log")
        log.append_entry(entry_assistant(
            [{"type": "text", "text": "reading"},
             {"type": "tool_use", "id": "tu1", "name": "Read", "input": {"file_path": "a.py"}}],
            response_id="r1", usage=usage(inp=5_000, out=1_000, write=100_000, read=50_000), model=MODEL))
        log.append_event(ev.ModelCall(message_id="c1", model=MODEL, purpose="compaction",
                                      usage=usage(inp=1_000, out=2_000, read=50_000)).to_dict())
        await until(pilot, lambda: scr.context_pane.context is not None and scr.cost_pane.cost is not None
                    and "compaction" in (scr.cost_pane.cost.by_purpose or {}), "the response and the summary call")
        c = scr.context_pane.context
        # Estimates (4 characters a token, 4 per message): "hello" 2+4; "reading" 2+4;
        # Read {"file_path":"a.py"} 1+5. The count is ctxtui's: 5k + 1k + 100k + 50k = 156,000.
        assert c.tokens == 156_000
        assert c.categories == {"overhead": 156_000 - 18, "user_text": 6, "assistant_text": 6, "tool_calls": 6,
                                "tool_results": 0, "summaries": 0,
                                "free": 200_000 - 156_000 - 33_000, "autocompact_buffer": 33_000}
        breakdown = text_of(scr.context_pane.query_one("#ctx-breakdown"))
        assert "Tool calls" in breakdown and "Overhead" in breakdown.title() and "Free" in breakdown
        cost = scr.cost_pane.cost
        # Sonnet 4.5 per million: input $3, output $15, cache write (5m) $3.75, cache read $0.30.
        assert cost.by_purpose["main"]["cost_usd"] == pytest.approx((5_000 * 3 + 1_000 * 15 + 100_000 * 3.75
                                                                      + 50_000 * 0.30) / 1e6)        # $0.42
        assert cost.by_purpose["compaction"]["cost_usd"] == pytest.approx((1_000 * 3 + 2_000 * 15
                                                                            + 50_000 * 0.30) / 1e6)  # $0.048
        assert cost.total_usd == pytest.approx(0.468)
        summary_text = text_of(scr.cost_pane.query_one("#cost-summary"))
        assert "compaction $0.05" in summary_text and "50k read from cache" in summary_text
        assert "Read" in text_of(scr.activity) and "a.py" in text_of(scr.activity)

        log.append_entry(entry_user("now fix it"))      # 10 characters: 3 + 4; the count moves when a response does
        ctx_answer(log, "r2", inp=200, out=100, read=156_000)
        await until(pilot, lambda: scr.context_pane.context.tokens == 156_300, "the next response")
        cats = scr.context_pane.context.categories
        assert cats["user_text"] == 6 + 7 and cats["assistant_text"] == 6 + 5      # "done": 1 + 4
        assert cats["overhead"] == 156_300 - (13 + 11 + 6)
        assert "› now fix it" in text_of(scr.activity)
    log.close()


# ================================================================== the look



def test_watch_screen_snapshot(snap_compare, utc, tmp_path):
    path = cc_log(tmp_path)
    append(path, raw="\n")
    for i, tokens in enumerate((60_000, 95_000, 130_000, 152_000), 3):
        append(path, cc(f"m{i}", read=tokens - 5_210, write=5_000, ts=f"2025-06-14T10:{30 + i * 5}:00Z"))
    append(path, boundary(152_000, session=SESSION, ts="2025-06-14T11:00:00Z"), summary(),
           cc("m9", write=18_000, ts="2025-06-14T11:00:10Z"),
           cc("m10", read=18_210, write=4_000, ts="2025-06-14T11:05:00Z"),
           cc("side1", read=9_000, model="claude-haiku-4-5-20251001", isSidechain=True, ts="2025-06-14T11:06:00Z"))
    app = make_app(WatchTarget(path), tmp_path)

    async def run_before(pilot):
        await until(pilot, app.watch_screen.loaded.is_set, "the loaded log")
        await settled(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_later_copy_of_a_response_updates_its_turn_instead_of_adding_one(tmp_path):
    """Claude Code writes one record per content block; only the last copy has the final output.
    Read live, the later copy replaces the first: one response, one turn, one plot point."""
    path = write_log(tmp_path / "s.jsonl", [user("go"), assistant("m1", u=usage(10, 3, read=5_000), block="thinking")])
    s = WatchState(path)
    s.poll()
    assert (s.turns, len(s.history), s.last_output) == (1, 1, 3)
    append(path, assistant("m1", u=usage(10, 441, read=5_000), block="text"))
    up = s.poll()
    assert (s.turns, len(s.history), s.responses, s.last_output) == (1, 1, 1, 441)
    assert up.cost.by_model[MODEL]["output"] == 441


async def test_an_append_lays_nothing_out_when_the_header_keeps_its_lines(tmp_path, monkeypatch):
    """A new response changes the header's counts, not its size: the screen is repainted where it
    changed, never arranged again (the header's own update laid out the whole screen on every append)."""
    from textual._compositor import Compositor

    path = tmp_path / f"{SESSION}.jsonl"
    write_log(path, [user("explore", session=SESSION, uuid="u1"), cc("m0", write=10_000)])
    app = make_app(WatchTarget(path), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        scr = app.watch_screen
        await until(pilot, lambda: scr.loaded.is_set() and scr.context_pane.context is not None, "the loaded log")
        await pilot.pause()
        layouts = []
        reflow = Compositor.reflow
        monkeypatch.setattr(Compositor, "reflow", lambda c, *a, **k: layouts.append(1) or reflow(c, *a, **k))
        for i in range(1, 6):
            append(path, cc(f"m{i}", read=10_000, write=1_000 * i))
            await until(pilot, lambda i=i: scr.context_pane.context.tokens == 10_010 + 1_000 * i, f"response {i}")
            await pilot.pause()
        assert "6 responses" in text_of(scr.query_one("WatchHeader"))
        assert not layouts, f"{len(layouts)} layouts of the screen for 5 appends"
