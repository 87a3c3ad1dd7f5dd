"""Older compactions keep their entry-level changes compressed (issue 23: a thousand-turn session's
memory). The inspector and the session log read them as before."""
from __future__ import annotations

import json
import pickle
import sys

from agent_core import events as ev
from agent_core.loop.compaction_parts import compaction_parts
from agent_core.loop.packed_parts import PARTS_LIVE, PackedParts
from compaction.entry import assistant, user

from tests.agent_helpers import demo_agent


def notes_compaction(i: int) -> ev.Compaction:
    """A session-memory compaction as the loop makes it: what it removed, and the notes it added."""
    a, b = user(f"question {i} " * 40), assistant(f"answer {i} " * 300, response_id=f"r{i}")
    notes = user("<session-notes>" + f"file_{i}.py: reads the config; " * 500 + "</session-notes>",
                 kind="summary")
    c = ev.Compaction(layer="session_memory", trigger="auto", tokens_before=9_000 + i, tokens_after=2_000)
    c.parts = compaction_parts([a, b], [notes, b], ["session_memory"])
    return c


def test_packed_parts_read_as_the_dict_they_hold_and_are_smaller():
    c = notes_compaction(1)
    plain = dict(c.parts)
    packed = PackedParts(plain)
    assert dict(packed) == plain and packed.get("removed_count") == plain["removed_count"]
    assert packed["added"][0]["text"] == plain["added"][0]["text"] and len(packed) == len(plain)
    assert packed.get("no such key", 7) == 7
    assert len(packed._blob) * 3 < len(json.dumps(plain))
    assert dict(pickle.loads(pickle.dumps(packed))) == plain     # the conversation archive pickles markers


def test_a_packed_compaction_serialises_as_a_plain_one():
    c = notes_compaction(2)
    before = json.dumps(c.to_dict(), sort_keys=True)
    c.parts = PackedParts(c.parts)
    assert json.dumps(c.to_dict(), sort_keys=True) == before


def test_the_agent_packs_all_but_the_newest_compactions(tmp_path):
    agent = demo_agent(tmp_path, home=str(tmp_path))
    made = [notes_compaction(i) for i in range(PARTS_LIVE + 5)]
    plain = [dict(c.parts) for c in made]
    for c in made:
        agent.history.keep(c)
    assert [isinstance(c.parts, PackedParts) for c in agent.compactions] == [True] * 5 + [False] * PARTS_LIVE
    assert [dict(c.parts) for c in agent.compactions] == plain
    held = sum(sys.getsizeof(c.parts._blob) for c in agent.compactions[:5])
    assert held * 3 < sum(len(json.dumps(p)) for p in plain[:5])


def test_a_resumed_session_packs_its_logged_compactions(tmp_path):
    from agent_core.loop.agent import Agent
    made = [notes_compaction(i) for i in range(PARTS_LIVE + 3)]
    agent = demo_agent(tmp_path, home=str(tmp_path))
    resumed = Agent(client=agent.client, pipeline=agent.pipeline, tools=agent.tools, tool_ctx=agent.tool_ctx,
                    permissions=agent.permissions, cost=agent.cost, system_prompt=agent.system_prompt,
                    session=agent.session, compactions=made)
    assert sum(isinstance(c.parts, PackedParts) for c in resumed.compactions) == 3


def test_a_resumed_session_reads_its_logged_parts_from_their_lines_without_packing_them(tmp_path, monkeypatch):
    """Packing ~800 logged compactions again (JSON, then zlib) was 0.3 s of resuming a thousand-turn
    session, more than the rest: their parts stay the bytes of the line they came on, read on use."""
    from agent_core.loop import packed_parts
    from agent_core.sessions.logged_parts import LoggedParts
    from agent_core.sessions.session_reader import load_session

    agent = demo_agent(tmp_path, home=str(tmp_path))
    made = [notes_compaction(i) for i in range(PARTS_LIVE + 3)]
    for c in made:
        agent.session.append_event(c)
    log, sid = agent.session.path, agent.session_id
    agent.session.close()
    loaded = [e for e in load_session(log).events if e.get("type") == "compaction"]
    assert [isinstance(e["parts"], LoggedParts) for e in loaded] == [True] * len(made)
    assert [dict(e["parts"]) for e in loaded] == [dict(c.parts) for c in made]
    packed = []
    real = packed_parts.PackedParts.__init__

    def counting(self, parts):
        packed.append(1)
        real(self, parts)

    monkeypatch.setattr(packed_parts.PackedParts, "__init__", counting)
    resumed = demo_agent(tmp_path, home=str(tmp_path), resume=sid)
    assert packed == []
    assert [c.parts for c in resumed.compactions] == [dict(c.parts) for c in made]
    assert resumed.compactions[0].to_dict()["parts"] == made[0].to_dict()["parts"]
    resumed.session.close()


def _event_line(event: dict) -> bytes:
    return json.dumps({"t": "event", "at": 1.5, "event": event}, separators=(",", ":")).encode() + b"\n"


def test_a_compaction_line_is_decoded_without_its_parts_and_reads_as_decoded_whole():
    from agent_core.sessions.logged_parts import LoggedParts, decode_compaction_line

    c = notes_compaction(3)
    c.usage = {"input_tokens": 5, "output_tokens": 2}
    line = _event_line(c.to_dict())
    rec = decode_compaction_line(line)
    assert isinstance(rec["event"]["parts"], LoggedParts)
    rec["event"]["parts"] = dict(rec["event"]["parts"])
    assert rec == json.loads(line)
    assert list(rec["event"]) == list(json.loads(line)["event"])      # the keys in their order


def test_a_line_of_another_shape_is_left_to_the_whole_decoder():
    """Nested "parts" or "usage" keys, keys after the event, a usage before the parts, cut-off or
    non-compaction lines: never read through the shortcut (None), so decoded whole as before."""
    from agent_core.sessions.logged_parts import decode_compaction_line

    parts = {"layers": ["snip"], "removed": [], "usage": {"input_tokens": 1}, "parts": {"x": 1}}
    base = {"type": "compaction", "layer": "snip", "cache": None, "parts": parts, "usage": None}
    assert decode_compaction_line(_event_line(base)) is not None        # nested keys inside the parts: fine
    shapes = [
        {**base, "cache": {"parts": {"a": 1}, "b": 2}},                  # a "parts" key nested before the parts
        {k: v for k, v in base.items() if k != "usage"},                  # no usage: the last "usage" is nested
        {"type": "compaction", "usage": None, "layer": "snip", "parts": parts},    # usage before the parts
        {**base, "type": "notice"},
    ]
    for event in shapes:
        line = _event_line(event)
        got = decode_compaction_line(line)
        if got is not None:       # only ever the same record
            got["event"]["parts"] = dict(got["event"]["parts"])
            assert got == json.loads(line), event
    assert decode_compaction_line(_event_line({k: v for k, v in base.items() if k != "usage"})) is None
    extra = json.dumps({"t": "event", "event": base, "after": 1}, separators=(",", ":")).encode()
    assert decode_compaction_line(extra) is None
    assert decode_compaction_line(_event_line(base)[:-40]) is None
