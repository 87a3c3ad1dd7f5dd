"""Shell mode (`!command`): the user's own command runs through the bash runner, and it and its
output become the user's message: logged, restored on resume, valid history, no model call."""
from __future__ import annotations

import asyncio

from compaction.entry import project
from compaction.validate import validate_history

from agent_core import events as ev
from agent_core.loop.shell_input import is_shell, shell_command, shell_of

from tests.agent_helpers import collect, demo_agent, make_workspace, of


def test_a_prompt_in_shell_mode_and_its_command():
    assert is_shell("!git status") and is_shell("  ! ls")
    assert not is_shell("what does ! mean") and not is_shell("/help")
    assert shell_command("  !  git status  ") == "git status"


async def test_the_command_and_its_output_become_the_users_message(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-of-ctxtui-0123456789")
    ws = make_workspace(tmp_path)
    agent = demo_agent(ws, interactive=True)
    try:
        events = await collect(agent.shell("echo hello; echo oops >&2; echo key=$ANTHROPIC_API_KEY; exit 3"))
        ran = of(events, ev.ShellRan)[0]
        assert ran.exit_code == 3 and ran.is_error and not ran.cancelled
        assert "hello" in ran.output and "oops" in ran.output and "sk-ant" not in ran.output
        assert of(events, ev.ContextUpdate), "the figure follows the new message"
        assert not of(events, ev.ModelCall) and agent.turns == 0, "no model call for a shell command"
        last = agent.entries[-1]
        assert last.role == "user"
        text = last.text()
        assert text.startswith("<bash-input>echo hello;") and "<bash-output>\nhello\noops" in text
        assert text.rstrip().endswith("exit code 3\n</bash-output>")
        assert shell_of(last)[0].startswith("echo hello") and shell_of(last)[2] is True

        # a prompt after it: two user messages in a row are one in the request, and it is valid
        await collect(agent.run("what did that print?"))
        assert validate_history(project(agent.entries)) == []
        request_user = project(agent.entries)[0]
        assert [b["text"][:12] for b in request_user["content"]] == ["<bash-input>", "what did tha"]
        session = agent.session_id
    finally:
        await agent.aclose()

    again = demo_agent(ws, interactive=True, resume=session)
    try:
        shells = [e for e in again.entries if shell_of(e) is not None]
        assert len(shells) == 1 and "hello" in shell_of(shells[0])[1]
        assert validate_history(project(again.entries)) == []
    finally:
        await again.aclose()


async def test_a_command_after_a_prompt_and_before_the_next_keeps_the_history_valid(tmp_path):
    agent = demo_agent(make_workspace(tmp_path), interactive=True)
    try:
        await collect(agent.run("explain src/"))
        await collect(agent.shell("ls src"))
        await collect(agent.shell("true"))
        assert validate_history(project(agent.entries)) == []
        assert "(no output)" in agent.entries[-1].text()
        await collect(agent.run("and now?"))
        assert validate_history(project(agent.entries)) == []
    finally:
        await agent.aclose()


async def test_cancelling_kills_the_command_and_adds_nothing(tmp_path):
    agent = demo_agent(make_workspace(tmp_path), interactive=True)
    try:
        before = len(agent.entries)
        stream = agent.shell("sleep 30")
        task = asyncio.ensure_future(collect(stream))
        for _ in range(200):
            await asyncio.sleep(0.01)
            if agent.busy:
                break
        await asyncio.sleep(0.1)
        agent.cancel()
        events = await asyncio.wait_for(task, 5)
        assert of(events, ev.ShellRan)[0].cancelled
        assert len(agent.entries) == before and not agent.busy
    finally:
        await agent.aclose()


async def test_a_failed_log_write_is_said_and_the_output_still_shown(tmp_path):
    from agent_core.sessions.session_log import SessionWriteError

    agent = demo_agent(make_workspace(tmp_path), interactive=True)
    try:
        await collect(agent.run("explain src/"))      # the log exists

        def full(entry):
            raise SessionWriteError("the disk is full: the session log could not be written")

        agent.session.append_entry = full
        events = await collect(agent.shell("echo kept"))
        assert "kept" in of(events, ev.ShellRan)[0].output
        assert [e.kind for e in of(events, ev.Error)] == ["session_log"]
        assert shell_of(agent.entries[-1]) is not None and not agent.busy
    finally:
        await agent.aclose()
