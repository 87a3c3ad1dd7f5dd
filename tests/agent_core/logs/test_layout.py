"""The folder rules of session logs (agent_core/logs/layout.py): Claude Code's sub-agent logs and
ctxtui's compaction transcripts, as every reader finds them."""
from __future__ import annotations

from agent_core.logs.discover import expand, is_main_log, list_logs, subagent_logs
from agent_core.logs.layout import (is_subagent_log, is_subagent_of, is_transcript, subagent_session_dir,
                                    subagents_dir, transcript_logs)
from agent_core.logs.reader import session_from_path
from agent_core.usage.report import project_of


def test_claude_code_sub_agent_logs(tmp_path):
    log = tmp_path / "projects" / "-home-me-proj" / "s1.jsonl"
    agent = subagents_dir(log) / "agent-7.jsonl"
    agent.parent.mkdir(parents=True)
    log.write_text("{}\n")
    agent.write_text("{}\n")
    assert agent == log.parent / "s1" / "subagents" / "agent-7.jsonl"
    assert is_subagent_log(agent) and not is_subagent_log(log)
    assert is_subagent_of(agent, log) and not is_subagent_of(agent, log.with_name("s2.jsonl"))
    assert subagent_session_dir(agent) == log.with_suffix("")
    assert subagent_logs(log) == [agent] and expand(log) == [log, agent]
    assert session_from_path(agent) == "s1" == session_from_path(log)
    assert project_of(str(agent)) == project_of(str(log)) == "-home-me-proj"
    assert is_main_log(log) and not is_main_log(agent)


def test_ctxtui_compaction_transcripts(tmp_path):
    sessions = tmp_path / "sessions"
    log = sessions / "20261130T081500-ab12cd.jsonl"
    transcript = sessions / log.stem / "transcripts" / "auto-1.jsonl"
    transcript.parent.mkdir(parents=True)
    log.write_text("{}\n")
    transcript.write_text("{}\n")
    assert is_transcript(transcript) and not is_transcript(log)
    assert transcript_logs(sessions) == [(transcript, log.stem)]
    assert expand(sessions) == [log] and not is_main_log(transcript)          # usage and watch skip them
    listed = {(f.path, f.kind) for f in list_logs(sessions, None)}
    assert listed == {(log, "session"), (transcript, "transcript")}           # the browser shows them


def test_the_readers_and_the_writer_name_the_transcripts_folder_alike():
    """layout.py keeps its own name for start-up time (no compaction import); it must be the writer's."""
    from agent_core.logs import layout
    from compaction.transcript import TRANSCRIPTS_FOLDER, transcripts_dir

    assert layout.TRANSCRIPTS == TRANSCRIPTS_FOLDER
    assert layout.is_transcripts_folder(transcripts_dir("/s/abc").name)
