"""Issue 21: headless output to a reader that goes away, and the json text of a dropped stream.

`ctxtui --headless -p ... | head -1` ended in a BrokenPipeError traceback: the reader closing
stdout now stops the run as SIGPIPE would, quietly, with 141 (128 + SIGPIPE), the session log
whole and resumable. And `--output-format json`'s `text` kept the partial text of an answer whose
stream broke off and was sent again: it now holds only what the completed answers said.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.headless import EXIT_PIPE, main as headless_main
from agent_core.logs.discover import latest_session
from agent_core.loop.turn_state import MID_STREAM_RETRIES
from agent_core.sessions.paths import project_state_dir, state_root
from agent_core.sessions.session_reader import load_session
from app.cli.main import build_parser
from compaction import project, validate_history
from tests.agent_helpers import MODEL, SECRET, make_workspace, user_dirs
from tests.headless_helpers import run_headless as run
from tests.fake_anthropic import FakeAnthropic, cut, echo_responder, reply, tool_use

ROOT = Path(__file__).resolve().parents[3]
LONG = "".join(f"line {i} of a long answer\n" for i in range(4000))


def env_for(fake):
    return {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url, "CTXTUI_MODEL": MODEL}


# ---------------------------------------------------------------- a reader that goes away

@pytest.mark.parametrize("fmt", ["text", pytest.param("stream-json", marks=pytest.mark.slow)])
def test_stdout_closed_early_exits_141_quietly_and_the_session_resumes(tmp_path, fmt):
    """`| head -1` for real: the reader takes one line and closes its end of the pipe while the
    answer is still streaming."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply(LONG, chunk=40, delay=0.003)], responder=echo_responder) as fake:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_"))},
               **env_for(fake)}
        proc = subprocess.Popen([sys.executable, "-m", "app.cli", "--headless", "-p", "write a lot", "--workspace",
                                 str(ws), "--output-format", fmt], cwd=str(ROOT), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            first = proc.stdout.readline()
            proc.stdout.close()                  # what head does after its first line
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        err = err.decode()
        assert first
        assert proc.returncode == EXIT_PIPE == 141, err
        assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err
        log = latest_session(project_state_dir(state_root(), ws.resolve())).path
        loaded = load_session(log)
        assert loaded.warnings == [] and loaded.skipped == 0 and loaded.cut_tail == 0
        assert validate_history(project(loaded.entries)) == []
        code, out, err = run(["-p", "go on", "--workspace", str(ws), "--continue", "--output-format", "json"],
                             env_for(fake))
        assert code == 0, err
        assert json.loads(out)["session_id"] == log.stem
        assert "write a lot" in json.dumps(fake.message_requests[-1]["messages"])


def test_json_result_to_a_closed_pipe_is_not_a_traceback(tmp_path):
    """The json format writes once, at the end: a reader gone by then still means 141, quietly."""
    ws = make_workspace(tmp_path)
    r, w = os.pipe()
    os.close(r)                                  # nobody will ever read
    with FakeAnthropic([reply("short answer")]) as fake, open(w, "w", closefd=True) as closed_out:
        args = build_parser().parse_args(["--headless", "-p", "hi", "--workspace", str(ws), "--output-format", "json"])
        err = io.StringIO()
        code = headless_main(args, stdin=io.StringIO(""), stdout=closed_out, stderr=err, environ=env_for(fake))
    assert code == 141 and "Traceback" not in err.getvalue()


# ---------------------------------------------------------------- json text of a dropped stream

def test_json_text_leaves_out_the_partial_answer_of_a_dropped_stream(tmp_path):
    ws = make_workspace(tmp_path)
    partial = reply("PARTIAL-ANSWER-THAT-BROKE-OFF " * 20, chunk=10)
    with FakeAnthropic([cut(after_events=8, reply_item=partial), reply("The final answer.")]) as fake:
        code, out, err = run(["-p", "hi", "--workspace", str(ws), "--output-format", "json"], env_for(fake))
    assert code == 0, err
    result = json.loads(out)
    assert result["text"] == "The final answer."


def test_json_text_of_a_stream_dropped_for_good_holds_no_partial_answer(tmp_path):
    ws = make_workspace(tmp_path)
    partial = reply("PARTIAL " * 50, chunk=5)
    with FakeAnthropic([cut(after_events=6, reply_item=partial)] * (MID_STREAM_RETRIES + 1)) as fake:
        code, out, err = run(["-p", "hi", "--workspace", str(ws), "--output-format", "json"], env_for(fake))
    result = json.loads(out)
    assert code == 1 and result["is_error"] and result["errors"]
    assert "PARTIAL" not in result["text"]


def test_json_text_keeps_every_completed_answer_around_a_retry(tmp_path):
    ws = make_workspace(tmp_path)
    script = [reply("Let me look. ", tool_use("glob", {"pattern": "*.md"})),
              cut(after_events=7, reply_item=reply("DROPPED " * 30, chunk=6)),
              reply("Found README.md.")]
    with FakeAnthropic(script) as fake:
        code, out, err = run(["-p", "hi", "--workspace", str(ws), "--output-format", "json"], env_for(fake))
    assert code == 0, err
    assert json.loads(out)["text"] == "Let me look. Found README.md."
