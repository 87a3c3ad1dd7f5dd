"""/wait on the demo: time passes on the one clock, so the demo's cache and the engine both see a
cold cache; a real model's clock never moves."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from agent_core import events as ev
from agent_core.providers.demo.pause import (PauseError, catch_up, default_seconds, describe, let_time_pass,
                                             parse_duration)
from compaction import clock, user
from compaction.entry import Entry

from tests.agent_helpers import collect, demo_agent, fake_agent, make_workspace, of
from tests.demo_project import build

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("text,seconds", [("6m", 360), ("90s", 90), ("1h", 3600), ("2m30s", 150),
                                          (" 1h 5m ", 3900), ("7", 420), ("0.5m", 30), ("6M", 360)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text,says", [("soon", "not a duration"), ("5x", "not a duration"), ("0m", "more than zero"),
                                       ("25h", "at most 24h"), ("-5m", "not a duration"), ("", "give a duration")])
def test_bad_durations_say_what_to_type(text, says):
    with pytest.raises(PauseError, match=says):
        parse_duration(text)


def test_default_is_the_ttl_and_a_minute():
    assert default_seconds("5m") == 360 and default_seconds("1h") == 3660


async def test_before_any_answer_there_is_no_cache_to_expire(tmp_path):
    agent = demo_agent(ROOT, home=str(tmp_path))
    p = let_time_pass(agent)
    assert p.seconds == 360 and p.since_request_s is None and p.cold
    assert "no cache to expire" in describe(p)
    await agent.aclose()


async def test_a_wait_past_the_ttl_empties_the_demo_cache_and_the_engine_sees_it_cold(tmp_path):
    """After /wait the demo's next request reads nothing from its cache, and microcompact's time
    trigger clears old results with the verdict `cold`; without the wait the same prompt reads the
    cached prefix and nothing is cleared."""
    async def session(wait: bool) -> tuple[list[ev.AssistantDone], list[ev.Compaction], str]:
        clock.reset()
        agent = demo_agent(build(tmp_path / f"ws{wait}"), home=str(tmp_path / str(wait)))
        await collect(agent.run("explore this repository"))
        said = describe(let_time_pass(agent, "6m")) if wait else ""
        events = await collect(agent.run("what does the agent loop do?"))
        await agent.aclose()
        return of(events, ev.AssistantDone), of(events, ev.Compaction), said

    warm_calls, warm_comps, _ = await session(False)
    cold_calls, cold_comps, said = await session(True)
    assert warm_calls[0].usage["cache_read_input_tokens"] > 0
    assert cold_calls[0].usage["cache_read_input_tokens"] == 0
    assert cold_calls[0].usage["cache_creation_input_tokens"] > 0
    assert "microcompact" not in {c.layer for c in warm_comps}
    micro = [c for c in cold_comps if c.layer == "microcompact"]
    assert micro and micro[0].cache["reason"] == "cold" and micro[0].tokens_after < micro[0].tokens_before
    assert "has expired" in said and "6m" in said


async def test_a_short_wait_leaves_the_cache_warm_and_says_how_long_it_lasts(tmp_path):
    agent = demo_agent(ROOT, home=str(tmp_path))
    await collect(agent.run("explore this repository"))
    p = let_time_pass(agent, "1m")
    assert not p.cold and 60 <= p.since_request_s < 120
    text = describe(p)
    assert "still warm for" in text and "/wait" in text
    events = await collect(agent.run("how does compaction work?"))
    assert of(events, ev.AssistantDone)[0].usage["cache_read_input_tokens"] > 0
    await agent.aclose()


async def test_a_real_model_never_moves_the_clock(tmp_path, fake_base_url):
    agent = fake_agent(make_workspace(tmp_path / "ws"), fake_base_url)
    with pytest.raises(PauseError, match="only the demo model's clock"):
        let_time_pass(agent, "6m")
    assert clock.skipped() == 0.0
    await agent.aclose()


def test_a_running_turn_moves_nothing():
    """The TUI relies on this refusal: a turn in flight keeps the time it started with."""
    running = SimpleNamespace(client=SimpleNamespace(info=SimpleNamespace(offline=True)), busy=True, entries=[],
                              pipeline=SimpleNamespace(config=SimpleNamespace(cache_ttl="5m")))
    with pytest.raises(PauseError, match="A turn is running: press Esc first"):
        let_time_pass(running, "6m")
    assert clock.skipped() == 0.0


async def test_a_bad_duration_moves_nothing(tmp_path):
    agent = demo_agent(ROOT, home=str(tmp_path))
    with pytest.raises(PauseError):
        let_time_pass(agent, "later")
    assert clock.skipped() == 0.0
    await agent.aclose()


async def test_a_resumed_demo_session_keeps_the_time_its_wait_let_pass(tmp_path):
    """A new process starts on the wall clock; resuming a demo session whose last turn came after a
    /wait moves the clock up to that turn, so the gap stays and the timeline never runs backwards."""
    agent = demo_agent(ROOT, home=str(tmp_path))
    await collect(agent.run("explore this repository"))
    let_time_pass(agent, "10m")
    await collect(agent.run("what does the agent loop do?"))
    newest = agent.entries[-1].timestamp
    sid = agent.session_id
    await agent.aclose()
    clock.reset()                               # as a new process would start
    again = demo_agent(ROOT, home=str(tmp_path), resume=sid)
    assert 599 <= clock.skipped() <= 601 and clock.now() >= newest
    await again.aclose()


def test_catch_up_never_moves_back_or_follows_a_broken_stamp():
    assert catch_up([user("now")]) == 0.0 and clock.skipped() == 0.0
    assert catch_up([Entry({"role": "user", "content": "x"}, timestamp=1e12)]) == 0.0
    assert clock.skipped() == 0.0


async def test_a_resumed_real_session_never_moves_the_clock(tmp_path, fake_base_url):
    ws = make_workspace(tmp_path / "ws")
    agent = fake_agent(ws, fake_base_url)
    agent.session.append_entry(Entry({"role": "user", "content": "hello"}, timestamp=clock.now() + 3600))
    sid = agent.session_id
    await agent.aclose()
    again = fake_agent(ws, fake_base_url, resume=sid)
    assert again.entries and again.entries[-1].timestamp > clock.now() and clock.skipped() == 0.0
    await again.aclose()
