"""The cache doctor in `ctxtui watch` (issue 27): each main request of a followed Claude Code log
that read short of what the request before it left is judged by its figures — a model switch, the
TTL expired, a compaction's rewrite — and the latest is a line of the activity pane. Sub-agents'
requests are not the main chain's cache and are left out."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_core.watch.state import WatchState
from agent_core.watch.target import WatchTarget
from tests.app.snapshot_helpers import settled
from tests.app.watch_helpers import SIZE, make_app, until
from tests.log_helpers import assistant, boundary, usage, user, write_log

SESSION = "5f1e2d3c-0000-4000-8000-000000000002"
HAIKU = "claude-haiku-4-5-20251001"


def cc(mid, *, read=0, write=0, ts, **kw):
    return assistant(mid, f"req-{mid}", u=usage(10, 200, write=write, read=read), ts=ts, session=SESSION, **kw)


def append(path: Path, *records) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))


def a_log(tmp_path: Path) -> Path:
    path = tmp_path / "projects" / "-home-me-proj" / f"{SESSION}.jsonl"
    return write_log(path, [user("explore the project", session=SESSION, uuid="u1"),
                            cc("m1", write=30_000, ts="2025-06-14T10:00:00Z"),
                            cc("m2", read=30_000, write=2_000, ts="2025-06-14T10:01:00Z"),
                            cc("side", read=0, write=9_000, model=HAIKU, isSidechain=True,
                               ts="2025-06-14T10:01:30Z")])


def test_watch_names_each_short_read_as_it_lands(tmp_path):
    path = a_log(tmp_path)
    s = WatchState(path)
    assert s.poll().cache_misses == [] and s.cache_miss_count == 0      # steady, and a sub-agent apart
    append(path, cc("m3", read=0, write=32_500, ts="2025-06-14T10:20:00Z"))          # 19 minutes on
    [ttl] = s.poll().cache_misses
    assert (ttl.request, ttl.read, ttl.expected, ttl.where, ttl.why) == (3, 0, 32_010, "", "TTL expired")
    append(path, cc("m4", read=0, write=33_000, model=HAIKU, ts="2025-06-14T10:21:00Z"))
    [switch] = s.poll().cache_misses
    assert switch.why == "model switch"
    append(path, boundary(33_000, session=SESSION, ts="2025-06-14T10:22:00Z"),
           cc("m5", read=3_000, write=4_000, model=HAIKU, ts="2025-06-14T10:22:10Z"))
    [rewrite] = s.poll().cache_misses
    assert rewrite.why == "compaction rewrite"
    assert rewrite.text() == "request 5 read 3,000 of 33,010 cached tokens: a compaction rewrote the messages"
    append(path, cc("m6", read=7_000, write=500, model=HAIKU, ts="2025-06-14T10:23:00Z"))
    assert s.poll().cache_misses == [] and s.cache_miss_count == 3


def test_a_log_read_whole_finds_the_same_misses_as_one_followed(tmp_path):
    path = a_log(tmp_path)
    append(path, cc("m3", read=0, write=32_500, ts="2025-06-14T10:20:00Z"),
           cc("m4", read=0, write=33_000, model=HAIKU, ts="2025-06-14T10:21:00Z"))
    s = WatchState(path)
    assert [m.why for m in s.poll().cache_misses] == ["TTL expired", "model switch"]


async def test_the_activity_pane_shows_the_latest_miss(tmp_path):
    path = a_log(tmp_path)
    app = make_app(WatchTarget(path), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, app.watch_screen.loaded.is_set, "the loaded log")
        assert "cache:" not in str(app.watch_screen.activity.render())
        append(path, cc("m3", read=0, write=32_500, ts="2025-06-14T10:20:00Z"))
        await until(pilot, lambda: "TTL expired" in str(app.watch_screen.activity.render()), "the cache line")
        text = str(app.watch_screen.activity.render())
    assert ("⚠ cache: request 3: the prefix did not change (TTL expired) · read 0 of 32,010 · 1 miss so far"
            in text)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_watch_cache_line_snapshot(snap_compare, utc, tmp_path, size):
    path = a_log(tmp_path)
    append(path, cc("m3", read=0, write=32_500, ts="2025-06-14T10:20:00Z"))
    app = make_app(WatchTarget(path), tmp_path)

    async def run_before(pilot):
        await until(pilot, app.watch_screen.loaded.is_set, "the loaded log")
        await settled(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
