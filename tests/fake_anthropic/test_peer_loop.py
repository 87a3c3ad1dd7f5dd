"""The closed loop against the real peer, in small (bench/vs_claude_code.py runs it at full size with
Claude Code from npm): the fake server and the scripted model take Claude Code 2.1.328's request
shape as recorded (tests/fake_anthropic/fixtures/claude_code_requests.json), and ctxtui runs the
loop as a user runs it, headless with stream-json."""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import anthropic
import pytest

from tests.closed_loop_agent import Step, FileFact, read_prompt, ask_prompt
from tests.closed_loop_peer import (WORKLOADS, PeerModel, build_deep_workspace, ctxtui, last_prompt_text, plan,
                                    run_client)
from tests.fake_anthropic import FakeAnthropic, is_summary_request

FIXTURE = Path(__file__).parent / "fixtures" / "claude_code_requests.json"
RECORDED = json.loads(FIXTURE.read_text(encoding="utf-8"))
WS = Path("/workspace/ws")
BETAS = "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27"     # as recorded
SDK_FIELDS = ("model", "messages", "system", "tools", "max_tokens")

F010 = FileFact("file_010.txt", "LGVN-20", 20_000)
F039 = FileFact("file_039.txt", "ZZZZ-11", 20_000)
F053 = FileFact("file_053.txt", "6J4J-45", 20_000)


def send(fake: FakeAnthropic, body: dict) -> anthropic.types.Message:
    """`body` through the real SDK, streamed as Claude Code streams it; fields the SDK has no argument
    for (thinking, context_management, output_config) go as extra body."""
    client = anthropic.Anthropic(api_key="sk-ant-test-peer-000", base_url=fake.base_url, max_retries=0,
                                 default_headers={"anthropic-beta": BETAS})
    extra = {k: v for k, v in body.items() if k not in (*SDK_FIELDS, "stream")}
    with client.messages.stream(**{k: body[k] for k in SDK_FIELDS}, extra_body=extra) as stream:
        return stream.get_final_message()


def test_the_recorded_compact_request_is_a_summary_request_and_gets_the_rule():
    body = copy.deepcopy(RECORDED["summary"])
    assert body["max_tokens"] == 32_000 and body["thinking"]["type"] == "adaptive"
    assert is_summary_request(body)        # the compact prompt sits in a text block after a tool result
    steps = [Step("read", F053, read_prompt(F053)), Step("read", F010, read_prompt(F010))]
    model = PeerModel(steps, WS)
    with FakeAnthropic(responder=model, context_window=200_000) as fake:
        answer = send(fake, body)
        rec = fake.requests[-1]
    assert rec.status == 200 and rec.served == "reply"
    text = "".join(b.text for b in answer.content if b.type == "text")
    assert model.summaries == 1 and "<summary>" in text
    assert read_prompt(F053) in text and read_prompt(F010) in text and "file_010.txt" in text
    assert F010.code not in text        # the rule: paths and prompts, never a file's content
    assert model.summary_facts_in == [2]        # both files' facts were in the request it summarised


def test_the_recorded_turn_gets_claude_codes_read_tool_and_recalls_from_its_context():
    body = copy.deepcopy(RECORDED["main"])
    assert last_prompt_text(body) == read_prompt(F039)     # system-reminder blocks are not the prompt
    steps = [Step("read", F039, read_prompt(F039)), Step("ask", F010, ask_prompt(F010), 3)]
    model = PeerModel(steps, WS)
    with FakeAnthropic(responder=model, context_window=200_000) as fake:
        # the read's result is in the request: the model answers and calls nothing
        model.step = 0
        done = send(fake, body)
        assert [b.type for b in done.content] == ["text"]
        # a fresh read: Claude Code's `Read` with an absolute `file_path`
        fresh = copy.deepcopy(body)
        fresh["messages"] = fresh["messages"][:-2]
        call = send(fake, fresh)
        uses = [b for b in call.content if b.type == "tool_use"]
        assert [(u.name, u.input) for u in uses] == [("Read", {"file_path": str(WS / "file_039.txt")})]
        # a recall of file_010, whose fact the kept in-progress turn holds verbatim
        ask = copy.deepcopy(body)
        ask["messages"] = ask["messages"][:-2] + [{"role": "assistant", "content": "file_039.txt holds notes."},
                                                   {"role": "user", "content": ask_prompt(F010)}]
        model.step = 1
        said = send(fake, ask)
    assert "LGVN-20" in said.content[0].text and model.outcomes[1].how == "context"


def test_facts_sit_at_every_depth(tmp_path):
    w = WORKLOADS["recall-a"]
    facts = build_deep_workspace(tmp_path, w)
    lines = [(tmp_path / f.path).read_text().splitlines() for f in facts]
    where = [next(i for i, line in enumerate(ls) if "FACT:" in line) / len(ls) for ls in lines]
    assert sum(x == 0 for x in where) > 15                      # the first line
    assert sum(0.2 < x < 0.8 for x in where) > 15               # the middle
    assert sum(x > 0.85 for x in where) > 15                    # the last tenth
    assert all(8 * 1024 <= f.size <= 31 * 1024 for f in facts)
    steps = plan(facts, w)
    assert len(steps) == 112 and sum(s.kind == "ask" for s in steps) == 55
    assert all(2 <= s.gap <= 30 for s in steps if s.kind == "ask")


@pytest.mark.parametrize("window", [200_000, 12_000])
def test_ctxtui_runs_the_small_loop_as_typed(tmp_path, window):
    exe = Path(sys.executable).with_name("ctxtui")
    run = run_client(ctxtui(exe), tmp_path, WORKLOADS["small"], window, turn_timeout=60)
    f = run.figures
    assert f.errors == [] and f.prompts == 22 and f.questions == 8
    assert f.answered + f.rereads + f.lost == 8 and f.lost == 0 and f.prompt_too_long == 0
    assert f.dollars > 0 and f.main_requests >= 22 + 14
    if window == 200_000:
        assert f.answered == 8 and f.compactions == 0 and f.prompts_kept == 22
    else:       # a window smaller than the files read: the engine must compact, and the loop sees it
        assert f.compactions > 0 and f.peak_tokens <= window
