"""`ctxtui acp` end to end: spawned as an editor spawns it, driven through the ACP SDK's client side,
against the loopback fake API (or the offline demo). Each test is one or two processes."""
from __future__ import annotations

import asyncio
import json
import sys

import pytest
from acp import RequestError, text_block
from acp.schema import McpServerStdio, SseMcpServer

from agent_core.logs.discover import latest_session
from tests.agent_helpers import make_workspace, user_dirs
from tests.app.acp.acp_helpers import TIMEOUT, Editor, acp_agent, fake_env, log_of
from tests.fake_anthropic import FakeAnthropic, reply, server_error, tool_use
from tests.headless_helpers import run_headless
from tests.mcp_helpers import CALC, gone

HOSTILE = "title\x1b]0;pwned\x07 \x1b[2J\r\x1b[2Kclear \u202eevil\u202c \x9b31m end"


async def _prompt(conn, sid: str, text: str):
    return await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block(text)]), TIMEOUT)


async def test_a_session_streams_text_tools_ask_the_editor_and_usage_is_reported(tmp_path):
    ws = make_workspace(tmp_path)
    script = [reply("Hello from the model.", chunk=4),
              reply("running it", tool_use("bash", {"command": "echo acp-ran"})), reply("it ran"),
              reply(tool_use("bash", {"command": "echo never"})), reply("it was rejected"),
              reply(HOSTILE)]
    editor = Editor(answers=["allow", "deny"])
    with FakeAnthropic(script) as fake:
        async with acp_agent(editor, fake_env(fake)) as (conn, _):
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            assert (await editor.wait_for("available_commands_update"))[0].available_commands[0].name == "compact"
            (start,) = await editor.wait_for("usage_update")     # the system prompt and tools, before any call
            assert 0 < start.used < 20_000 and start.cost.amount == 0

            first = await _prompt(conn, sid, "say hello")
            assert first.stop_reason == "end_turn"
            chunks = editor.of("agent_message_chunk")
            assert len(chunks) > 1 and editor.text() == "Hello from the model."
            usage = editor.of("usage_update")[-1]
            assert usage.used > 0 and usage.size == 200_000
            assert usage.cost.currency == "USD" and usage.cost.amount > 0
            assert usage.field_meta["ctxtui"]["state"] == "ok" and usage.field_meta["ctxtui"]["threshold"] > 0
            # the figure comes after the answer: a model call, then its usage
            kinds = [u.session_update for u in editor.updates]
            assert kinds.index("usage_update", kinds.index("agent_message_chunk")) > 0

            editor.clear()
            allowed = await _prompt(conn, sid, "run the command")
            (start,) = editor.of("tool_call")
            (done,) = editor.of("tool_call_update")
            assert allowed.stop_reason == "end_turn"
            assert start.kind == "execute" and start.title == "bash: echo acp-ran" and start.status == "pending"
            assert editor.asked[0].tool_call_id == start.tool_call_id == done.tool_call_id
            assert done.status == "completed" and "acp-ran" in done.content[0].content.text
            assert "acp-ran" in json.dumps(fake.message_requests[2]["messages"][-1])

            editor.clear()
            rejected = await _prompt(conn, sid, "run another")
            (done,) = editor.of("tool_call_update")
            assert rejected.stop_reason == "end_turn" and len(editor.asked) == 2
            assert done.status == "failed" and "denied" in done.content[0].content.text
            told = json.dumps(fake.message_requests[4]["messages"][-1]["content"])     # what the model read
            assert "denied permission" in told and "never" not in told

            editor.clear()
            await _prompt(conn, sid, "say something nasty")
            assert editor.text() == HOSTILE       # data in JSON, exactly as the model said it
    assert log_of(ws, sid).is_file()


@pytest.mark.slow      # the real SDK's first request costs seconds: the permission-wait cancel below runs by default
async def test_cancel_stops_a_streaming_answer(tmp_path):
    ws = make_workspace(tmp_path)
    editor = Editor()
    with FakeAnthropic([reply("slow " * 400, chunk=4, delay=0.05), reply("after the cancel")]) as fake:
        async with acp_agent(editor, fake_env(fake)) as (conn, _):
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            turn = asyncio.ensure_future(_prompt(conn, sid, "stream slowly"))
            await editor.wait_for("agent_message_chunk")
            await conn.cancel(session_id=sid)
            assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
            assert 0 < len(editor.text()) < len("slow " * 400)
            assert (await _prompt(conn, sid, "go on")).stop_reason == "end_turn"
            assert "stream slowly" in json.dumps(fake.message_requests[-1]["messages"])


async def test_cancel_ends_a_turn_waiting_for_permission(tmp_path):
    """On the demo model (no key): it asks to run bash while exploring; the editor keeps the
    question open, then cancels the prompt."""
    ws = make_workspace(tmp_path)
    editor = Editor(answers=["wait"])
    async with acp_agent(editor, {}) as (conn, _):
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        turn = asyncio.ensure_future(_prompt(conn, sid, "explore this repository"))
        await asyncio.wait_for(editor.got_permission.wait(), TIMEOUT)
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"
        editor.release.set()           # the editor's answer, too late, changes nothing
        (asked,) = editor.asked
        assert asked.kind == "execute" and asked.title.startswith("bash: ")
        results = {u.tool_call_id: u for u in editor.of("tool_call_update")}
        assert {u.tool_call_id for u in editor.of("tool_call")} <= set(results)     # none left pending
        assert results[asked.tool_call_id].status == "failed"
        assert "cancel" in results[asked.tool_call_id].content[0].content.text.lower()
        assert (await _prompt(conn, sid, "hello again")).stop_reason == "end_turn"


async def test_offline_demo_compacts_and_the_compaction_is_in_the_usage_updates_meta(tmp_path):
    ws = make_workspace(tmp_path)
    editor = Editor()
    async with acp_agent(editor, {}, "--context-window", "8000") as (conn, _):
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert (await _prompt(conn, sid, "explore this repository")).stop_reason == "end_turn"
        assert "offline demo model" in editor.text("agent_thought_chunk")
        editor.clear()
        assert (await _prompt(conn, sid, "/compact the tools")).stop_reason == "end_turn"
    with_meta = [u for u in editor.of("usage_update") if u.field_meta["ctxtui"].get("compactions")]
    assert with_meta, [u.field_meta for u in editor.of("usage_update")]
    comps = with_meta[-1].field_meta["ctxtui"]["compactions"]
    manual = [c for c in comps if c["trigger"] == "manual"]
    assert manual and manual[-1]["tokensBefore"] > manual[-1]["tokensAfter"]
    assert {"layer", "trigger", "tokensBefore", "tokensAfter", "costUsd"} <= set(manual[-1])
    assert any(c["costUsd"] > 0 for c in manual)          # a summary call, priced
    assert with_meta[-1].cost.amount > 0 and with_meta[-1].size == 8000


@pytest.mark.slow
async def test_load_session_replays_the_history_and_the_session_resumes_anywhere(tmp_path):
    ws = make_workspace(tmp_path)
    first = Editor()
    async with acp_agent(first, {}) as (conn, _):
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        await _prompt(conn, sid, "what is the word pelican?")
    assert log_of(ws, sid).is_file()
    assert latest_session(log_of(ws, sid).parents[1]).session_id == sid     # what watch and --continue find

    again = Editor()
    async with acp_agent(again, {}) as (conn, _):
        await asyncio.wait_for(conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[]), TIMEOUT)
        assert again.text("user_message_chunk") == "what is the word pelican?"
        assert again.text() == first.text() != ""
        assert {u.tool_call_id for u in again.of("tool_call")} == {u.tool_call_id for u in first.of("tool_call")}
        assert again.of("usage_update")[-1].used > 0
        assert (await _prompt(conn, sid, "and then?")).stop_reason == "end_turn"
        with pytest.raises(RequestError):     # an unknown id is an error, not a new session
            await conn.load_session(cwd=str(ws), session_id="20990101T000000-ffffff", mcp_servers=[])

    code, out, err = await asyncio.to_thread(run_headless, ["-p", "in the terminal now", "--workspace", str(ws),
                                                           "--resume", sid, "--output-format", "json"],
                                             {**user_dirs(), "CTXTUI_MODEL": "demo"})
    assert code == 0, err
    assert json.loads(out)["session_id"] == sid and json.loads(out)["turns"] == 3


@pytest.mark.slow      # the mcp SDK and a server process: seconds
async def test_the_editors_mcp_servers_are_started_and_stopped_with_the_session(tmp_path):
    ws = make_workspace(tmp_path)
    pid = tmp_path / "calc.pid"
    servers = [McpServerStdio(name="calc", command=sys.executable, args=[str(CALC), str(pid)], env=[]),
               SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[])]
    editor = Editor()
    async with acp_agent(editor, {}) as (conn, _):
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=servers)).session_id
        assert (await _prompt(conn, sid, "hello")).stop_reason == "end_turn"
    notes = editor.text("agent_thought_chunk")
    assert "MCP server calc: 4 tools" in notes, notes
    assert "MCP server old: the sse transport is not supported" in notes
    assert gone(pid)


@pytest.mark.slow
async def test_a_failed_turn_is_an_error_response_and_the_session_goes_on(tmp_path):
    ws = make_workspace(tmp_path)
    script = [server_error(0.01), server_error(0.01), server_error(0.01), reply("back again")]
    editor = Editor()
    with FakeAnthropic(script) as fake:
        async with acp_agent(editor, fake_env(fake)) as (conn, _):
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            with pytest.raises(RequestError) as failed:
                await _prompt(conn, sid, "hello")
            assert failed.value.code == -32603 and failed.value.data["kind"] == "server"
            assert "server" in failed.value.data["details"].lower() and failed.value.data["retryable"] is True
            assert "[error] server" in editor.text()          # said in the conversation too
            editor.clear()
            again = await _prompt(conn, sid, "hello again")
            assert again.stop_reason == "end_turn" and editor.text() == "back again"


async def test_a_cancel_sent_right_after_the_prompt_always_ends_the_turn(tmp_path):
    """The cancel's line follows the prompt's at once, 30 times: each prompt answers cancelled (a
    cancel that came before the turn's task first ran used to leave the turn running for good)."""
    ws = make_workspace(tmp_path)
    editor = Editor()
    async with acp_agent(editor, {}) as (conn, _):
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        for attempt in range(30):
            answered, _ = await asyncio.wait_for(asyncio.gather(      # the prompt's line is written first
                conn.prompt(session_id=sid, prompt=[text_block("explore this repository")]),
                conn.cancel(session_id=sid)), 10)
            assert answered.stop_reason == "cancelled", attempt
        assert (await _prompt(conn, sid, "hello again")).stop_reason == "end_turn"


async def test_load_session_refuses_an_empty_id_and_another_folder(tmp_path):
    ws, other = make_workspace(tmp_path / "one"), make_workspace(tmp_path / "two")
    editor = Editor()
    async with acp_agent(editor, {}) as (conn, _):
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        with pytest.raises(RequestError) as empty:
            await asyncio.wait_for(conn.load_session(cwd=str(ws), session_id="", mcp_servers=[]), TIMEOUT)
        assert empty.value.code == -32602 and "20261207T120133-bc18ad" in empty.value.data["details"]
        with pytest.raises(RequestError) as elsewhere:
            await asyncio.wait_for(conn.load_session(cwd=str(other), session_id=sid, mcp_servers=[]), TIMEOUT)
        details = elsewhere.value.data["details"]
        assert elsewhere.value.code == -32602 and str(ws.resolve()) in details and str(other) in details
        await asyncio.wait_for(conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[]), TIMEOUT)
