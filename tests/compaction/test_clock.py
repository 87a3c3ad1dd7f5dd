"""The one clock: entries, the pipeline and transcripts read it, so a skip is seen by all of them."""
from __future__ import annotations

import calendar
import math
import time

import pytest

from compaction import Pipeline, clock, user
from compaction.cache_economics import is_cold
from compaction.entry import Entry
from compaction.layer_context import LayerContext, PipelineConfig, PipelineState
from compaction.report import LayerResult
from compaction.transcript import write_transcript


def test_now_is_the_wall_clock_until_skipped():
    before = time.time()
    assert before <= clock.now() <= time.time()
    assert clock.skipped() == 0.0


def test_skip_moves_now_and_adds_up():
    t0 = clock.now()
    assert clock.skip(360) == 360.0
    assert clock.skip(0.5) == 360.5
    assert clock.now() - t0 >= 360.5
    clock.reset()
    assert clock.skipped() == 0.0 and clock.now() < t0 + 360


@pytest.mark.parametrize("bad", [0, -1, math.inf, math.nan, "6m", None])
def test_skip_refuses_what_is_not_a_positive_finite_number(bad):
    with pytest.raises(ValueError):
        clock.skip(bad)
    assert clock.skipped() == 0.0


def test_entries_are_stamped_by_the_clock():
    clock.skip(3600)
    e = user("hi")
    assert e.timestamp >= time.time() + 3599


def test_cold_cache_follows_the_clock():
    """An answer stamped now is warm; after the TTL has passed on the clock it is cold."""
    answer = Entry({"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
                   usage={"input_tokens": 10, "output_tokens": 2})
    history = [user("hi"), answer]
    config = PipelineConfig()
    ctx = lambda: LayerContext(config, PipelineState(), None, clock.now(), 100, "auto")  # noqa: E731
    assert not is_cold(history, ctx())
    clock.skip(5 * 60 + 1)
    assert is_cold(history, ctx())


def test_pipeline_default_now_is_the_clock():
    seen = []

    def spy(entries, ctx):
        seen.append(ctx.now)
        return LayerResult(entries)

    p = Pipeline(layers=([("spy", spy)], []))
    clock.skip(7200)
    p.run_cheap([user("hi")])
    assert seen and seen[0] >= time.time() + 7199


def test_transcript_names_follow_the_clock(tmp_path):
    clock.skip(86_400)
    days = {time.strftime("%Y%m%d", time.gmtime(time.time() + 86_400))}
    path = write_transcript(tmp_path, [user("hi")], "manual")
    days.add(time.strftime("%Y%m%d", time.gmtime(time.time() + 86_400)))   # in case midnight came between
    assert path.name[:8] in days


def test_a_transcript_written_after_a_wait_is_modified_at_the_clock_time(tmp_path):
    """The transcript browser shows the name's time and the file's modified time side by side: after
    the demo's /wait they were a day apart."""
    clock.skip(86_400)
    path = write_transcript(tmp_path, [user("hi")], "manual")
    named = calendar.timegm(time.strptime(path.name[:15], "%Y%m%dT%H%M%S"))
    assert abs(path.stat().st_mtime - named) < 1
    assert path.stat().st_mtime > time.time() + 86_000
