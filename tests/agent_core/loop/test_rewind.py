"""`/rewind` (issue 28): the working history goes back to just before an earlier prompt, the
prompt is handed back, the log keeps everything and a resume comes back to the rewound history;
the history invariants hold and the next turn goes on from there."""
from __future__ import annotations

import pytest
from hypothesis import assume, given, settings

from agent_core.loop.rewind import prompt_text, rewind_points
from compaction import validate_history
from tests.strategies import histories
from tests.agent_helpers import collect, fake_agent, make_workspace
from tests.fake_anthropic import FakeAnthropic, echo_responder


async def test_rewind_cuts_to_before_the_prompt_and_resume_keeps_the_cut(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        agent = fake_agent(ws, fake.base_url)
        for p in ("first question", "second question", "third question"):
            await collect(agent.run(p))
        points = agent.rewind_points()
        assert [p.text for p in points] == ["first question", "second question", "third question"]
        before = len(agent.entries)
        text = agent.rewind(points[1].index)
        assert text == "second question"
        assert len(agent.entries) == points[1].index < before
        assert validate_history([e.message for e in agent.entries]) == []
        assert [p.text for p in agent.rewind_points()] == ["first question"]
        await collect(agent.run("second, asked again"))
        sid = agent.session_id
        await agent.aclose()
        log = agent.session.path.read_text()
        assert "third question" in log and "Rewound to prompt 2" in log     # the log keeps everything
        resumed = fake_agent(ws, fake.base_url, resume=sid)
        assert [p.text for p in resumed.rewind_points()] == ["first question", "second, asked again"]
        await resumed.aclose()
    sent = fake.message_requests[-1]["messages"]
    assert "third question" not in str(sent) and "second question" not in str(sent)


async def test_rewind_refuses_what_is_not_a_prompt_and_a_running_turn(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        agent = fake_agent(ws, fake.base_url)
        await collect(agent.run("only"))
        with pytest.raises(ValueError, match="not a prompt"):
            agent.rewind(1)                   # the answer, not a prompt
        await agent.aclose()


@settings(max_examples=60, deadline=None)
@given(histories())
def test_every_rewind_point_leaves_a_valid_history(entries):
    assume(validate_history([e.message for e in entries if e.sent]) == [])
    for point in rewind_points(entries):
        kept = [e.message for e in entries[:point.index] if e.sent]
        assert point.index == 0 or validate_history(kept) == [], (point, kept[-1:])
        assert prompt_text(entries[point.index]) == point.text


async def test_a_shell_command_is_a_point_given_back_as_typed(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        agent = fake_agent(ws, fake.base_url)
        await collect(agent.run("first"))
        await collect(agent.shell("echo hi"))
        await collect(agent.run("second"))
        points = agent.rewind_points()
        assert [p.text for p in points] == ["first", "!echo hi", "second"]
        assert agent.rewind(points[1].index) == "!echo hi"
        assert [p.text for p in agent.rewind_points()] == ["first"]
        await agent.aclose()
