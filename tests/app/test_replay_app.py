"""The `ctxtui replay` screen (app/replay/app.py): the loading worker and its progress, the plots and
table per session, switching sessions, failures shown as messages, and its look at 80×24 and
120×40 (snapshots). The engine is replaced by loaders injected here (tests/app/replay_fixture.py),
so nothing depends on real logs. Waits are bounded polls for a condition, never timing checks.

Update the snapshots after an intended change with
`pytest tests/app/test_replay_app.py --snapshot-update`.
"""
from __future__ import annotations

import asyncio
import threading
import time

import pytest
from textual.widgets import Label, ProgressBar, Static, Tabs

from app import format as fmt
from app.replay.app import ReplayApp
from app.replay.screen import ReplayScreen
from agent_core.replay.report_model import ReplayReport, ReportError
from app.replay.report import describe_failure, ratio, recorded_text, table_rows, totals_parts, validation_text
from app.replay.plots import ReplayContextPlot, ReplayCostPlot, nice_ticks, request_ticks
from app.replay.table import PolicyTable
from compaction.scrub import register_secret
from tests.app.replay_fixture import POLICIES, WINDOW, fixture_load, fixture_report
from tests.app.snapshot_helpers import settled
from tests.pilot_until import until

DEADLINE = 10.0


async def loaded(app: ReplayApp, pilot) -> None:
    await asyncio.wait_for(app.replay_screen.done.wait(), DEADLINE)
    await pilot.pause()


def text_of(app: ReplayApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


# ----- the worker and its progress ---------------------------------------------------------------
async def test_worker_shows_progress_then_the_report():
    release = threading.Event()
    calls = []

    def slow_load(options, progress):
        calls.append((options, threading.current_thread() is threading.main_thread()))
        progress("reading big.jsonl", 0.25)
        assert release.wait(DEADLINE)
        return ReplayReport.from_json(fixture_report())

    app = ReplayApp({"paths": ["big.jsonl"]}, slow_load)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.replay_screen
        bar = screen.query_one("#replay-progress", ProgressBar)
        await until(pilot, lambda: bar.progress == 25, "the progress bar at 25%")
        label = str(screen.query_one("#replay-progress-label", Label).render())
        assert "reading big.jsonl" in label and "25%" in label
        assert screen.phase == "loading"
        assert not screen.query_one("#replay-body").display
        release.set()
        await loaded(app, pilot)
        assert screen.phase == "loaded"
        assert not screen.query_one("#replay-loading").display
        assert screen.query_one("#replay-body").display
    assert calls == [({"paths": ["big.jsonl"]}, False)]     # called once, with the options, off the UI thread


async def test_progress_posts_only_changes_and_clamps(monkeypatch):
    monkeypatch.setattr(ReplayScreen, "PROGRESS_INTERVAL", 0.0, raising=False)   # every change (the rate: below)

    def noisy_load(options, progress):
        for _ in range(50):
            progress("reading", 0.5)       # the same step fifty times: posted once
        progress("reading", 7.0)           # out of range: shown as 100%
        progress("replaying", -1)          # and 0%
        return ReplayReport.from_json(fixture_report())

    seen = []

    def hook(message):
        if isinstance(message, ReplayScreen.Progressed):
            seen.append((message.label, message.fraction))

    app = ReplayApp(None, noisy_load)
    async with app.run_test(size=(100, 30), message_hook=hook) as pilot:
        await loaded(app, pilot)
    assert seen == [("reading", 0.5), ("reading", 1.0), ("replaying", 0.0)]


async def test_progress_is_posted_at_a_bounded_rate_and_the_newest_is_not_lost():
    elapsed = []

    def chatty_load(options, progress):
        start = time.monotonic()
        for i in range(20_000):                    # a loader that reports every request
            progress(f"request {i:,} of 20,000", i / 20_000)
        progress("last step", 0.999)               # too soon to post: posted before the report
        elapsed.append(time.monotonic() - start)
        return ReplayReport.from_json(fixture_report())

    seen = []

    def hook(message):
        if isinstance(message, ReplayScreen.Progressed):
            seen.append(message.label)

    app = ReplayApp(None, chatty_load)
    async with app.run_test(size=(100, 30), message_hook=hook) as pilot:
        await loaded(app, pilot)
    assert seen[0] == "request 0 of 20,000" and seen[-1] == "last step"
    assert len(seen) <= elapsed[0] / ReplayScreen.PROGRESS_INTERVAL + 2


async def test_the_real_replay_reports_each_phase_to_the_screen(tmp_path, monkeypatch):
    """The engine's own progress (reading, then each policy's requests, then the check) reaches the
    screen as messages and its label while the replay runs."""
    from agent_core.replay import runner
    from agent_core.replay.options import make_options
    from agent_core.replay.synthetic_log import write_claude_code_log

    monkeypatch.setattr(runner, "PROGRESS_INTERVAL", 0.0)
    monkeypatch.setattr(ReplayScreen, "PROGRESS_INTERVAL", 0.0)
    log = tmp_path / "long.jsonl"
    n = write_claude_code_log(log, requests=60).requests
    labels, fractions, shown = [], [], []

    def hook(message):
        if isinstance(message, ReplayScreen.Progressed):
            labels.append(message.label)
            fractions.append(message.fraction)

    app = ReplayApp(make_options([str(log)]))
    async with app.run_test(size=(100, 30), message_hook=hook) as pilot:
        label = app.replay_screen.query_one("#replay-progress-label", Label)
        update = label.update

        def drawn(content="", *a, **kw):      # what the screen puts in the label, however fast it runs
            shown.append(str(content))
            return update(content, *a, **kw)
        label.update = drawn
        while not app.replay_screen.done.is_set():
            await pilot.pause(0.01)
        await loaded(app, pilot)
        assert app.replay_screen.phase == "loaded"
    assert any(x.startswith("reading ") and " MB of " in x for x in labels)
    for i, name in enumerate(("none", "cc", "summary", "ctxtui"), 1):
        assert f"long.jsonl · policy {i} of 4 ({name}) · request {n} of {n}" in labels
    assert "long.jsonl · checking the cache model against the log" in labels
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any("request" in x for x in shown)                   # put on the screen while it ran


# ----- the plots and the table -------------------------------------------------------------------
async def test_plots_have_one_series_per_policy_with_window_and_markers():
    report = fixture_report()
    app = ReplayApp(None, fixture_load)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(app, pilot)
        ctx = app.screen.query_one(ReplayContextPlot)
        cost = app.screen.query_one(ReplayCostPlot)
        first = report["sessions"][0]["policies"]
        assert list(ctx.lines) == list(POLICIES)
        assert list(cost.lines) == list(POLICIES)
        for name in POLICIES:
            series = first[name]["series"]
            assert ctx.lines[name] == [float(v) for v in series["context"]]
            assert cost.lines[name] == series["cost_cum"]
            assert ctx.markers[name] == [(i + 1, float(series["context"][i])) for i, _ in series["markers"]]
        assert ctx.hlines == [float(WINDOW)]
        # the plotext figure holds the same: one labelled line per policy (scatter markers are unlabelled)
        labels = [lab for lab in ctx.plt.monitor.label if lab]
        assert labels == list(POLICIES)
        assert [lab for lab in cost.plt.monitor.label if lab] == list(POLICIES)
        assert set(ctx.glyphs) == {"autocompact", "microcompact"}


async def test_a_policy_far_over_the_window_does_not_flatten_the_others():
    report = fixture_report()
    none = report["sessions"][0]["policies"]["none"]["series"]
    none["context"] = [v * 10 for v in none["context"]]           # up to ~13 windows
    app = ReplayApp(None, lambda options, progress: ReplayReport.from_json(report))
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(app, pilot)
        ctx = app.screen.query_one(ReplayContextPlot)
        assert WINDOW < ctx.y_top <= 2 * WINDOW < max(none["context"])
        assert "cut at" in ctx.heading
        assert ctx.lines["none"] == [float(v) for v in none["context"]]     # the data is all there
        await pilot.press("j")                                              # session 2 fits: no cut
        assert "cut at" not in ctx.heading and ctx.y_top >= WINDOW


async def test_a_window_far_above_the_context_is_left_off_the_chart():
    report = fixture_report()
    report["window"] = report["sessions"][0]["window"] = 1_000_000      # a 1M model, sessions of ~100k
    app = ReplayApp(None, lambda options, progress: ReplayReport.from_json(report))
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(app, pilot)
        ctx = app.screen.query_one(ReplayContextPlot)
        highest = max(max(v) for v in ctx.lines.values())
        assert ctx.hlines == [] and highest <= ctx.y_top < 1_000_000
        assert "1.0M far above" in ctx.heading


async def test_table_and_notes_show_the_session():
    report = fixture_report()
    app = ReplayApp(None, fixture_load)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(app, pilot)
        table = app.screen.query_one(PolicyTable)
        assert [str(c.label) for c in table.columns.values()][1:] == list(POLICIES)
        rows = dict(table.rows_shown)
        ctxtui = report["sessions"][0]["policies"]["ctxtui"]
        assert rows["compactions: microcompact"][2] == str(ctxtui["compactions"]["microcompact"])
        assert rows["user msgs kept"][2] == f"{ctxtui['user_messages_kept']}/{ctxtui['user_messages_total']}"
        assert rows["content kept"][2] == f"{ctxtui['content_kept']}/{ctxtui['content_total']}"
        assert rows["$ net of re-reads"][2] == fmt.usd(ctxtui["cost_usd"] + ctxtui["reread_usd"])
        assert list(rows).index("content kept") == list(rows).index("references kept") + 1
        assert table.row_count == len(table.rows_shown)
        notes = text_of(app, "#replay-notes")
        assert "1.8%" in notes and "3.2%" in notes          # the session's validation figures
        assert "Summaries are sized, not written" in notes  # the report's limits
        assert "◆ autocompact" in notes                     # the marker glyphs explained
        header = str(app.screen.query_one("#replay-header", Static).render())
        total_cc = report["totals"]["cc"]["cost_usd"]
        assert f"${total_cc:,.2f}" in header and "2 sessions" in header


@pytest.mark.slow
async def test_switching_sessions_changes_the_plotted_data():
    report = fixture_report()
    contexts = [[float(v) for v in s["policies"]["cc"]["series"]["context"]] for s in report["sessions"]]
    assert contexts[0] != contexts[1]
    app = ReplayApp(None, fixture_load)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(app, pilot)
        screen = app.replay_screen
        ctx = screen.query_one(ReplayContextPlot)
        tabs = screen.query_one(Tabs)
        assert ctx.lines["cc"] == contexts[0] and tabs.active == "session-0"
        for key, index in (("tab", 1), ("tab", 0), ("j", 1), ("k", 0), ("shift+tab", 1)):
            await pilot.press(key)
            await pilot.pause()
            assert screen.index == index, key
            assert ctx.lines["cc"] == contexts[index], key
            assert tabs.active == f"session-{index}"
            assert report["sessions"][index]["path"] in text_of(app, "#replay-session")
        await pilot.click("#session-0")
        await pilot.pause()
        assert screen.index == 0 and ctx.lines["cc"] == contexts[0]


async def test_sub_agent_session_and_per_session_window():
    report = fixture_report()
    report["window"] = None                  # each log's own window (the engine's default)
    report["sessions"][1]["window"] = 50_000
    app = ReplayApp(None, lambda options, progress: ReplayReport.from_json(report))
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(app, pilot)
        ctx = app.screen.query_one(ReplayContextPlot)
        assert ctx.hlines == [float(WINDOW)]
        await pilot.press("j")
        assert ctx.hlines == [50_000.0]
        line = text_of(app, "#replay-session")
        assert "agent-7b2c" in line and "2 unreadable lines skipped" in line and "50,000" in line
        assert "agent-7b2c" in str(app.screen.query_one("#session-1").render())
        rows = dict(app.screen.query_one(PolicyTable).rows_shown)
        pols = report["sessions"][1]["policies"]
        assert rows["  of which compaction"] == [fmt.usd(pols[n]["compaction_cost_usd"]) for n in POLICIES]
        assert pols["cc"]["compaction_cost_usd"] > 0


async def test_a_single_session_hides_the_tabs_and_none_says_so():
    one = fixture_report()
    one["sessions"] = one["sessions"][:1]
    app = ReplayApp(None, lambda options, progress: ReplayReport.from_json(one))
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(app, pilot)
        assert not app.screen.query_one(Tabs).display
        assert app.replay_screen.session is not None

    empty = {"sessions": [], "totals": {}, "window": 1000, "ttl": "5m", "limits": []}
    app = ReplayApp(None, lambda options, progress: ReplayReport.from_json(empty))
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(app, pilot)
        assert app.replay_screen.phase == "loaded"
        assert "no sessions" in text_of(app, "#replay-session")
        await pilot.press("tab")           # nothing to switch to: no error
        await pilot.press("q")
    assert app.return_value == 0


async def test_help_toggles():
    app = ReplayApp(None, fixture_load)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(app, pilot)
        help_box = app.screen.query_one("#replay-help")
        assert not help_box.display
        await pilot.press("question_mark")
        assert help_box.display
        await pilot.press("escape")
        assert not help_box.display


# ----- failures ----------------------------------------------------------------------------------
@pytest.mark.parametrize("error, expect", [
    (FileNotFoundError(2, "No such file or directory", "/logs/nope.jsonl"), ("/logs/nope.jsonl does not exist",
                                                                             "Check the path")),
    (PermissionError(13, "Permission denied", "/logs/secret.jsonl"), ("permission denied", "read access")),
    (ValueError("--window must be at least 1000"), ("--window must be at least 1000", "--help")),
    (RuntimeError("boom"), ("RuntimeError: boom", "bug")),
])
async def test_a_loader_that_raises_shows_what_to_do(error, expect):
    def failing(options, progress):
        progress("reading", 0.1)
        raise error

    app = ReplayApp(None, failing)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(app, pilot)
        screen = app.replay_screen
        assert screen.phase == "error"
        box = text_of(app, "#replay-error")
        assert expect[0] in box and expect[1] in box
        assert "Traceback" not in box
        assert screen.query_one("#replay-error").display and not screen.query_one("#replay-body").display
        assert app.failed
        await pilot.press("q")
    assert app.return_value == 1


async def test_a_malformed_report_is_an_error_not_a_crash():
    app = ReplayApp(None, lambda options, progress: ReplayReport.from_json(
        {"sessions": [{"policies": {"cc": {"overflows": "many"}}}]}))
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(app, pilot)
        assert app.replay_screen.phase == "error"
        assert "sessions[0].policies.cc.overflows" in text_of(app, "#replay-error")


async def test_success_exits_zero():
    app = ReplayApp(None, fixture_load)
    async with app.run_test(size=(100, 30)) as pilot:
        await loaded(app, pilot)
        await pilot.press("q")
    assert app.return_value == 0 and not app.failed


# ----- the report as the screen reads it (no screen) ----------------------------------------------
def test_parse_report_keeps_the_figures():
    report = fixture_report()
    result = ReplayReport.from_json(report)
    assert len(result.sessions) == 2 and result.window == WINDOW and result.ttl == "5m"
    cc = result.sessions[1].policies["cc"]
    raw = report["sessions"][1]["policies"]["cc"]
    assert cc.cost_usd == raw["cost_usd"] and cc.overflows == raw["overflows"]
    assert cc.markers == tuple((i, layer) for i, layer in raw["series"]["markers"])
    assert result.policy_names == POLICIES
    assert result.totals["none"] == (report["totals"]["none"]["cost_usd"], report["totals"]["none"]["overflows"],
                                     report["totals"]["none"]["net_cost_usd"])
    assert (cc.content_kept, cc.content_total, cc.rereads, cc.reread_usd) == (
        raw["content_kept"], raw["content_total"], raw["rereads"], raw["reread_usd"])


@pytest.mark.parametrize("mutate, where", [
    (lambda r: r.pop("sessions"), "no 'sessions'"),
    (lambda r: r.__setitem__("sessions", "x"), "sessions should be a list"),
    (lambda r: r["sessions"][0]["policies"]["cc"]["series"].__setitem__("context", [1, "x"]),
     "sessions[0].policies.cc.series.context[1]"),
    (lambda r: r["sessions"][1]["policies"]["none"]["series"].__setitem__("markers", [[3]]),
     "sessions[1].policies.none.series.markers[0]"),
    (lambda r: r["totals"]["cc"].__setitem__("cost_usd", float("nan")), "totals.cc.cost_usd"),
])
def test_parse_report_names_the_bad_field(mutate, where):
    report = fixture_report()
    mutate(report)
    with pytest.raises(ReportError, match=None) as e:
        ReplayReport.from_json(report)
    assert where in str(e.value)
    assert ReplayReport.from_json(fixture_report())       # the fixture itself is fine


def test_table_rows_compare_with_cc():
    result = ReplayReport.from_json(fixture_report())
    s = result.sessions[0]
    rows = dict(table_rows(s))
    costs = [s.policies[n].cost_usd for n in POLICIES]
    assert rows["vs cc"] == [f"{c / costs[1]:.2f}×" for c in costs]
    assert rows["overflows"][0] == f"{s.policies['none'].overflows:,}"
    assert set(rows) >= {"$ total", "  $ cache_write", "  $ cache_read", "cache hit rate", "references kept"}
    assert ratio(1.0, 0) == "—" and ratio(None, 1.0) == "—"


def test_table_rows_show_content_kept_and_dollars_net_of_rereads():
    result = ReplayReport.from_json(fixture_report())
    s = result.sessions[0]
    rows = dict(table_rows(s))
    pols = [s.policies[n] for n in POLICIES]
    nets = [p.cost_usd + p.reread_usd for p in pols]
    assert rows["content kept"] == [f"{p.content_kept}/{p.content_total}" for p in pols]
    assert rows["$ net of re-reads"] == [fmt.usd(n) for n in nets]
    assert rows["  of which re-reads"] == [fmt.usd(p.reread_usd) for p in pols]
    assert rows["re-reads"] == [str(p.rereads) for p in pols]
    assert rows["vs cc, net"] == [f"{n / nets[1]:.2f}×" for n in nets]
    assert rows["vs cc, net"][2] != rows["vs cc"][2]       # ctxtui's re-reads change its ratio


def test_table_rows_show_the_logs_rereads_and_summary_calls_and_the_notes_the_recorded_dollars():
    report = fixture_report()
    s0 = report["sessions"][0]
    for i, p in enumerate(s0["policies"].values()):
        p["rereads_logged"], p["summary_calls"] = i, 2 * i
    s0.update(recorded_cost_usd=1.25, recorded_source="cost-state", logged_cost_usd=1.1)
    s = ReplayReport.from_json(report).sessions[0]
    rows = dict(table_rows(s))
    assert rows["  of which the log's"] == ["0", "1", "2"] and rows["summary calls"] == ["0", "2", "4"]
    assert "refused as too long" not in rows                  # no reactive policy here
    assert recorded_text(s) == (f"recorded: {fmt.usd(1.25)} from Claude Code's cost-state record (every call, "
                                f"compactions included); its requests as logged {fmt.usd(1.1)}")
    s0.update(recorded_source="requests", recorded_cost_usd=1.1)
    assert recorded_text(ReplayReport.from_json(report).sessions[0]) == \
        f"recorded: {fmt.usd(1.1)}, the log's own requests"
    s0.update(recorded_source="main-cost-state", recorded_cost_usd=None)
    assert "main log's cost-state" in recorded_text(ReplayReport.from_json(report).sessions[0])
    assert recorded_text(ReplayReport.from_json(fixture_report()).sessions[0]) is None   # a report saved before


def test_a_report_without_content_kept_shows_no_such_rows():
    report = fixture_report()
    for s in report["sessions"]:
        for p in s["policies"].values():
            for key in ("content_kept", "content_total", "rereads", "reread_usd"):
                del p[key]
    for t in report["totals"].values():
        del t["net_cost_usd"]
    result = ReplayReport.from_json(report)
    rows = dict(table_rows(result.sessions[0]))
    assert not {"content kept", "$ net of re-reads", "vs cc, net", "re-reads"} & set(rows)
    assert "references kept" in rows
    parts = dict(totals_parts(result))
    assert "net" not in parts["ctxtui"] and "× cc" in parts["ctxtui"]


def test_totals_and_validation_text():
    result = ReplayReport.from_json(fixture_report())
    parts = dict(totals_parts(result))
    assert list(parts) == list(POLICIES)
    assert "× cc" not in parts["cc"] and "× cc" in parts["ctxtui"]
    net = result.totals["ctxtui"].net_cost_usd / result.totals["cc"].net_cost_usd
    assert f"net {fmt.usd(result.totals['ctxtui'].net_cost_usd)}" in parts["ctxtui"]
    assert parts["ctxtui"].endswith(f"net {net:.2f}×")
    assert "17 overflows" in parts["none"]
    s = result.sessions[1]
    assert "0.6%" in validation_text(s) and "2.1%" in validation_text(s)
    bare = ReplayReport.from_json({"sessions": [{"path": "a.jsonl", "policies": {}}]})
    assert "no cache usage" in validation_text(bare.sessions[0])


def test_failures_are_scrubbed():
    register_secret("sk-ant-api03-" + "x" * 40)
    what, todo = describe_failure(RuntimeError("key sk-ant-api03-" + "x" * 40 + " rejected"))
    assert "x" * 40 not in what and todo


def test_ticks():
    for top in (1, 7, 99, 106_300, 0.37, 2.5):
        ticks = nice_ticks(top)
        assert ticks[0] == 0 and ticks[-1] >= top and 2 <= len(ticks) <= 8
    assert nice_ticks(0) == [0.0, 1.0]
    assert request_ticks(1) == [1]
    for n in (2, 9, 30, 60, 1234):
        ticks = request_ticks(n)
        assert ticks[0] == 1 and ticks[-1] == n and ticks == sorted(set(ticks))


# ----- snapshots ---------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_replay_screen_snapshot(snap_compare, size):
    app = ReplayApp(None, fixture_load)

    async def run_before(pilot):
        await loaded(app, pilot)
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_replay_error_snapshot(snap_compare):
    def failing(options, progress):
        raise FileNotFoundError(2, "No such file or directory", "/logs/nope.jsonl")

    app = ReplayApp(None, failing)

    async def run_before(pilot):
        await loaded(app, pilot)
        await settled(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


# ----- with the real engine ------------------------------------------------------------------------
async def test_the_real_engine_on_a_generated_session():
    from agent_core.replay.options import ReplayOptions
    from agent_core.replay.runner import run_replay
    from agent_core.replay.synthetic import generate

    trajectory = generate(40, seed=3)
    seen = []

    def load(options, progress):
        return run_replay(options, progress, trajectories=[trajectory])

    def hook(message):
        if isinstance(message, ReplayScreen.Progressed):
            seen.append(message.fraction)

    app = ReplayApp(ReplayOptions(paths=(), window=60_000), load)
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await loaded(app, pilot)
        assert app.replay_screen.phase == "loaded", app.replay_screen.error
        ctx = app.screen.query_one(ReplayContextPlot)
        assert set(ctx.lines) >= {"none", "cc", "ctxtui"}
        assert {len(v) for v in ctx.lines.values()} == {len(trajectory.requests)}
        assert "window 60k" in ctx.heading
        cost = app.screen.query_one(ReplayCostPlot)
        assert all(v == sorted(v) for v in cost.lines.values())       # cumulative dollars never fall
    assert seen and seen[-1] == 1.0


def test_validation_text_names_each_miss_and_its_reason():
    data = fixture_report()
    misses = [{"request": 31, "reason": "first message block changed", "read": 21_460, "expected": 111_068},
              {"request": 149, "reason": "first message block changed", "read": 21_460, "expected": 76_541},
              {"request": 7, "reason": "model switch", "read": 0, "expected": 5_000}]
    data["sessions"][1]["validation"].update({"misses": misses, "cache_read_error_pct_without_misses": 0.1,
                                              "cache_write_error_pct_without_misses": 0.3})
    text = validation_text(ReplayReport.from_json(data).sessions[1])
    assert "3 request(s) missed the cache" in text and "0.1% / 0.3%" in text
    assert "first message block changed: requests 31, 149; model switch: request 7" in text


def test_a_saved_report_with_unexplained_misses_still_loads():
    data = fixture_report()
    data["sessions"][1]["validation"].update({"unexplained_misses": [31, 149]})
    text = validation_text(ReplayReport.from_json(data).sessions[1])
    assert "2 request(s) missed the cache (unknown: requests 31, 149)" in text


async def test_the_notes_carry_the_cache_doctor_with_hostile_text_shown_not_obeyed():
    report = fixture_report()
    report["sessions"][0]["cache_doctor"] = [
        {"request": 31, "read": 21_460, "expected": 111_068, "short": 89_608, "where": "message 1",
         "why": "compaction rewrite", "model": "claude-opus-4-6"},
        {"request": 40, "read": 0, "expected": 90_000, "short": 90_000, "where": "message \x1b]0;pwned\x07 2",
         "why": None, "model": "x"}]

    def load(options, progress):
        return ReplayReport.from_json(report)

    app = ReplayApp(None, load)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(app, pilot)
        notes = text_of(app, "#replay-notes")
    assert "cache doctor" in notes
    assert "• request 31 read 21,460 of 111,068 cached tokens: changed at message 1 (compaction rewrite)" in notes
    assert "\x1b" not in notes and "\x07" not in notes and "pwned" in notes
