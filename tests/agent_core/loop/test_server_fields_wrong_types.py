"""Issue 21, case 6 (server engine part): an answer whose `context_management` or `usage.iterations`
is of the wrong type (a string, a number, NaN, infinity...) ended in "Internal error: AttributeError"
and the answer was dropped; NaN and infinity printed pydantic warnings on stderr. Through the real
SDK against the fake server: the answer is kept, the odd field is left out with a notice, nothing
is printed, and the session goes on."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from agent_core import events as ev
from agent_core.providers.server_context import read_outcome
from tests.agent_helpers import MODEL, SECRET, collect, fake_agent, make_workspace, of, user_dirs
from tests.fake_anthropic import FakeAnthropic, reply

ROOT = Path(__file__).resolve().parents[3]
NAN, INF = float("nan"), float("inf")
CLEAR = "clear_tool_uses_20250919"

HOSTILE_CONTEXT_MANAGEMENT = [
    "junk",
    42,
    NAN,
    INF,
    True,
    ["applied_edits"],
    {"applied_edits": "junk"},
    {"applied_edits": NAN},
    {"applied_edits": ["x", 3, None]},
    {"applied_edits": [{"type": CLEAR, "cleared_input_tokens": "many", "cleared_tool_uses": NAN}]},
    {"applied_edits": [{"type": CLEAR, "cleared_input_tokens": INF, "cleared_tool_uses": -5}]},
    {"applied_edits": [{"type": ["not", "a", "type"], "cleared_input_tokens": 10}]},
]
HOSTILE_ITERATIONS = [
    "junk",
    7,
    NAN,
    -INF,
    {"type": "message", "input_tokens": 5},
    ["x", 1, None],
    [{"type": "message", "input_tokens": NAN, "output_tokens": INF}],
    [{"type": "compaction", "input_tokens": "lots", "output_tokens": -INF}],
    [{"type": "message", "input_tokens": 10, "cache_creation": "junk"}],
]
HOSTILE_USAGE = [                                  # the top-level usage itself
    {"output_tokens": NAN},
    {"input_tokens": INF},
    {"cache_read_input_tokens": "many", "cache_creation": "junk"},
]


def _strict(line: str):
    """json.loads that refuses NaN and Infinity (what other JSON readers do)."""
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(line, parse_constant=refuse)


async def _run_hostile(tmp_path, capfd, item: dict, engine: str = "server") -> list[ev.Event]:
    ws = make_workspace(tmp_path)
    with FakeAnthropic([item, reply("and the next answer")]) as fake:
        agent = fake_agent(ws, fake.base_url, engine=engine)
        with warnings.catch_warnings(record=True) as caught:     # the filters ctxtui runs with
            events = await collect(agent.run("hi"))
            later = await collect(agent.run("go on"))
        await agent.aclose()
    assert not [e.message for e in of(events, ev.Error)]
    assert events[-1].stop_reason == "end_turn"
    texts = [b.get("text") for e in agent.entries if e.role == "assistant" for b in e.content]
    assert "the answer survives" in texts and "and the next answer" in texts
    assert later[-1].stop_reason == "end_turn" and not of(later, ev.Error)
    assert [str(w.message) for w in caught] == []
    out, err = capfd.readouterr()
    assert "Pydantic" not in out + err and "Warning" not in err, err
    assert math.isfinite(agent.cost.total_usd or 0.0)
    for c in of(events, ev.Compaction):
        assert isinstance(c.tokens_before, int) and isinstance(c.tokens_after, int)
    for line in agent.session.path.read_text().splitlines():     # the log stays standard JSON
        _strict(line)
    return events


def _notices(events) -> list[str]:
    return [e.message for e in of(events, ev.Notice) if not isinstance(e, ev.Waiting)]


@pytest.mark.parametrize("value", HOSTILE_CONTEXT_MANAGEMENT, ids=repr)
async def test_a_context_management_of_the_wrong_type_keeps_the_answer(tmp_path, capfd, value):
    events = await _run_hostile(tmp_path, capfd, reply("the answer survives", context_management=value))
    if value != {"applied_edits": [{"type": ["not", "a", "type"], "cleared_input_tokens": 10}]}:
        (notice,) = [n for n in _notices(events) if "unexpected type" in n]
        assert "context_management" in notice and "kept" in notice


@pytest.mark.parametrize("value", HOSTILE_ITERATIONS, ids=repr)
async def test_usage_iterations_of_the_wrong_type_keep_the_answer(tmp_path, capfd, value):
    events = await _run_hostile(tmp_path, capfd, reply("the answer survives", usage={"iterations": value}))
    if value != [{"type": "message", "input_tokens": 10, "cache_creation": "junk"}]:
        (notice,) = [n for n in _notices(events) if "unexpected type" in n]
        assert "usage.iterations" in notice


@pytest.mark.parametrize("value", HOSTILE_USAGE, ids=repr)
async def test_top_level_usage_of_the_wrong_type_counts_zero(tmp_path, capfd, value):
    events = await _run_hostile(tmp_path, capfd, reply("the answer survives", usage=value))
    (done,) = of(events, ev.AssistantDone)
    assert all(isinstance(v, int) and v >= 0 for k, v in done.usage.items() if k.endswith("tokens"))


@pytest.mark.parametrize("engine", ["local", "hybrid"])
async def test_the_other_engines_tolerate_them_too(tmp_path, capfd, engine):
    await _run_hostile(tmp_path, capfd, reply("the answer survives", context_management="junk",
                                              usage={"iterations": NAN}), engine=engine)


def test_read_outcome_names_what_it_left_out():
    out = read_outcome([], {"context_management": {"applied_edits": [
        {"type": CLEAR, "cleared_input_tokens": 1200, "cleared_tool_uses": 3},
        {"type": CLEAR, "cleared_input_tokens": NAN, "cleared_tool_uses": "two"}]},
        "iterations": [{"type": "message", "input_tokens": 900, "output_tokens": INF}, "x"]})
    assert [(c.cleared_tokens, c.cleared) for c in out.clears] == [(1200, 3), (0, 0)]
    assert out.message_usage["input_tokens"] == 900 and out.message_usage["output_tokens"] == 0
    assert out.ignored == ["context_management.applied_edits[1].cleared_input_tokens (nan)",
                           "context_management.applied_edits[1].cleared_tool_uses (a str)",
                           "usage.iterations[0].output_tokens (inf)", "usage.iterations[1] (a str)"]
    assert read_outcome([], {"context_management": {"applied_edits": []}, "iterations": []}).ignored == []
    assert read_outcome([], "junk").ignored == []           # not even a dict: nothing to read


@pytest.mark.parametrize("fmt", ["text", pytest.param("stream-json", marks=pytest.mark.slow)])
def test_the_cli_prints_the_answer_and_nothing_on_stderr(tmp_path, fmt):
    """`ctxtui --headless --engine server` as a user runs it: NaN and infinity in every field a
    count can be, a string for context_management: the answer on stdout, exit 0, stderr silent."""
    ws = make_workspace(tmp_path)
    hostile = reply("the answer survives", context_management="junk",
                    usage={"input_tokens": NAN, "output_tokens": INF,
                           "iterations": [{"type": "message", "input_tokens": NAN, "output_tokens": -INF}]})
    env = {**os.environ, **user_dirs(), "ANTHROPIC_API_KEY": SECRET, "CTXTUI_MODEL": MODEL}
    with FakeAnthropic([hostile]) as fake:
        done = subprocess.run([sys.executable, "-m", "app.cli", "--headless", "-p", "hi", "--workspace", str(ws),
                               "--engine", "server", "--base-url", fake.base_url, "--output-format", fmt],
                              cwd=ROOT, env={**env, "ANTHROPIC_BASE_URL": fake.base_url}, capture_output=True,
                              text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Internal error" not in done.stdout + done.stderr
    assert "Pydantic" not in done.stderr and "Warning" not in done.stderr and "Traceback" not in done.stderr
    if fmt == "text":
        assert "the answer survives" in done.stdout
    else:
        events = [_strict(line) for line in done.stdout.splitlines()]
        assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "the answer survives"
        assert events[-1]["type"] == "result" and events[-1]["stop_reason"] == "end_turn"
        assert any(e["type"] == "notice" and "unexpected type" in e["message"] for e in events)
