"""`ctxtui --headless --input-format stream-json` (issue 23): one user message a line on stdin, in
Claude Code's headless form, each run as a turn of one session in one process; a line that is not
one is an `input` error and the next line runs; the end of input ends the run."""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_core.logs.discover import latest_session
from agent_core.sessions.paths import project_state_dir, state_root
from agent_core.sessions.session_reader import load_session
from app.cli.headless import main as headless_main
from app.cli.main import build_parser, main as cli_main
from app.cli.stream_input import InputLineError, parse_input_line
from tests.agent_helpers import MODEL, SECRET, make_workspace, user_dirs
from tests.fake_anthropic import FakeAnthropic, echo_responder, last_user_text, reply, server_error

ROOT = Path(__file__).resolve().parents[3]
ESC = "\x1b"


def user(content) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": content}})


def run(argv, environ, lines: list[str] | str):
    args = build_parser().parse_args(["--headless", "--input-format", "stream-json", *argv])
    text = lines if isinstance(lines, str) else "".join(line + "\n" for line in lines)
    out, err = io.StringIO(), io.StringIO()
    code = headless_main(args, stdin=io.StringIO(text), stdout=out, stderr=err, environ=environ)
    return code, out.getvalue(), err.getvalue()


def env_for(fake):
    return {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url, "CTXTUI_MODEL": MODEL}


def demo_env():
    return {**user_dirs(), "CTXTUI_MODEL": "demo"}


def session_logs(ws: Path) -> list[Path]:
    return sorted((project_state_dir(state_root(), ws.resolve()) / "sessions").glob("*.jsonl"))


def events(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def per_turn(evs: list[dict]) -> list[list[dict]]:
    """The events cut after each `result` (a refused line's `error` stands alone)."""
    turns, cur = [], []
    for e in evs:
        cur.append(e)
        if e["type"] == "result":
            turns.append(cur)
            cur = []
    return turns


# ---- several prompts, one session --------------------------------------------------------------------

def test_each_line_is_a_turn_of_one_session(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        code, out, err = run(["--workspace", str(ws), "--output-format", "stream-json"], env_for(fake),
                             [user("first question"), user([{"type": "text", "text": "second"},
                                                            {"type": "text", "text": "question"}]),
                              user("third question")])
    assert code == 0, err
    turns = per_turn(events(out))
    assert len(turns) == 3
    results = [t[-1] for t in turns]
    assert [r["turns"] for r in results] == [1, 2, 3]
    assert len({r["session_id"] for r in results}) == 1 and not any(r["is_error"] for r in results)
    for t in turns:      # each turn prints what a single prompt prints: its context first, cost and result last
        assert t[0]["type"] == "context" and t[-2]["type"] == "cost"
        assert [e["type"] for e in t].count("turn_started") == 1
    assert [last_user_text(r) for r in fake.message_requests] == ["first question", "second\n\nquestion",
                                                                    "third question"]
    third = fake.message_requests[-1]["messages"]
    assert "first question" in json.dumps(third[0]) and len(third) == 5      # the history went on
    (log,) = session_logs(ws)
    assert log.stem == results[0]["session_id"]
    assert [e.message["content"][0]["text"] for e in load_session(log).entries if e.message["role"] == "user"] == \
        ["first question", "second\n\nquestion", "third question"]


def test_demo_model_json_output_is_one_object_per_turn(tmp_path):
    ws = make_workspace(tmp_path)
    code, out, err = run(["--workspace", str(ws), "--output-format", "json"], demo_env(),
                         [user("zebra question"), user("walrus question")])
    assert code == 0, err
    first, second = events(out)
    assert first["type"] == second["type"] == "result" and (first["turns"], second["turns"]) == (1, 2)
    assert first["session_id"] == second["session_id"]
    assert "zebra" in first["text"] and "zebra" not in second["text"] and "walrus" in second["text"]
    assert len(session_logs(ws)) == 1


def test_text_output_closes_each_turn(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("One."), reply("Two.")]) as fake:
        code, out, err = run(["--workspace", str(ws)], env_for(fake), [user("a"), user("b")])
    assert code == 0
    assert out.split() == ["One.", "Two."]
    assert err.count("[done] end_turn") == 2 and "turns 1" in err and "turns 2" in err


# ---- lines that are not a user message ---------------------------------------------------------------

BAD_LINES = [
    ("not json at all", "not JSON"),
    ('{"type": "user", "message": ', "not JSON"),
    ("[1, 2]", "a list, not a user message"),
    (json.dumps({"type": "assistant", "message": {"role": "assistant", "content": "x"}}), "not a user message"),
    (json.dumps({"type": "user"}), "`message` is missing"),
    (json.dumps({"type": "user", "message": "hi"}), "`message` is a string"),
    (json.dumps({"type": "user", "message": {"role": "system", "content": "x"}}), "role is 'system'"),
    (user(""), "empty content"),
    (user("   \n "), "empty content"),
    (user([]), "empty content"),
    (user(None), "`content` is null"),
    (user(42), "`content` is a number"),
    (user([{"type": "image", "source": {"type": "base64", "data": ""}}]),
     "content block 1 is an object of type 'image'"),
    (user([{"type": "text", "text": "ok"}, "plain"]), "content block 2 is a string"),
    (user([{"type": "text"}]), "content block 1 has no `text` string"),
    ("[" * 100_000 + "]" * 100_000, "not JSON"),
]


@pytest.mark.parametrize("line,reason", BAD_LINES, ids=[r for _, r in BAD_LINES])
def test_a_bad_line_is_refused_with_its_reason(line, reason):
    with pytest.raises(InputLineError) as e:
        parse_input_line(line)
    assert reason in str(e.value)


def test_text_blocks_and_strings_are_prompts():
    assert parse_input_line(user("hello")) == "hello"
    assert parse_input_line(user([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])) == "a\n\nb"
    assert parse_input_line(json.dumps({"type": "user", "message": {"content": "no role"}})) == "no role"
    assert parse_input_line(user("\ud800 lone")) == "\ufffd lone"      # a lone surrogate cannot be sent


def test_malformed_line_is_an_error_event_then_the_next_line_runs(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        code, out, err = run(["--workspace", str(ws), "--output-format", "stream-json"], env_for(fake),
                             [user("before"), "{oops", "", user([{"type": "image"}]), user(""), user("after")])
    assert code == 1                                    # a line was refused: the script is told
    assert "Traceback" not in err and err == ""
    evs = events(out)
    refused = [e for e in evs if e["type"] == "error"]
    assert [e["kind"] for e in refused] == ["input"] * 3
    assert [e["message"].split(":")[0] for e in refused] == ["stdin line 2", "stdin line 4", "stdin line 5"]
    results = [e for e in evs if e["type"] == "result"]
    assert [r["turns"] for r in results] == [1, 2] and not any(r["is_error"] for r in results)
    assert [last_user_text(r) for r in fake.message_requests] == ["before", "after"]


def test_json_output_prints_a_refused_line_as_an_object_of_its_own(tmp_path):
    ws = make_workspace(tmp_path)
    code, out, _ = run(["--workspace", str(ws), "--output-format", "json"], demo_env(), ["nope", user("go")])
    refused, result = events(out)
    assert code == 1 and refused["type"] == "error" and refused["kind"] == "input"
    assert result["type"] == "result" and result["errors"] == [] and result["is_error"] is False


def test_text_output_notes_a_refused_line_on_stderr(tmp_path):
    ws = make_workspace(tmp_path)
    code, out, err = run(["--workspace", str(ws)], demo_env(), ["nope", user("go")])
    assert code == 1 and "[error] input: stdin line 1: not JSON" in err and "[done] end_turn" in err


# ---- the end of input --------------------------------------------------------------------------------

def test_end_of_input_ends_the_run(tmp_path):
    ws = make_workspace(tmp_path)
    code, out, err = run(["--workspace", str(ws), "--output-format", "stream-json"], demo_env(), user("one"))
    assert code == 0, err        # the last line needs no newline
    assert [e["turns"] for e in events(out) if e["type"] == "result"] == [1]
    code, out, err = run(["--workspace", str(ws), "--output-format", "stream-json"], demo_env(), "\n\n")
    assert code == 0 and "result" not in out and "Traceback" not in err    # no prompt: nothing to do, no error


def test_a_failed_turn_fails_the_run_and_the_next_line_still_runs(tmp_path):
    ws = make_workspace(tmp_path)
    def responder(body):
        return server_error(retry_after=0.01) if last_user_text(body) == "b" else reply("fine")

    with FakeAnthropic(responder=responder) as fake:
        code, out, _ = run(["--workspace", str(ws), "--output-format", "stream-json"], env_for(fake),
                           [user("a"), user("b"), user("c")])
    results = [e for e in events(out) if e["type"] == "result"]
    assert code == 1 and [r["is_error"] for r in results] == [False, True, False]


# ---- hostile text ------------------------------------------------------------------------------------

HOSTILE = f"{ESC}]52;c;cGF5bG9hZA=={ESC}\\{ESC}[2J\u202eevil\x07"


def test_escape_characters_in_the_input_never_reach_the_terminal_raw(tmp_path):
    ws = make_workspace(tmp_path)
    lines = [user(f"look at {HOSTILE}"), user([{"type": f"im{HOSTILE}age"}]),
             f"not json {HOSTILE}", user([{"type": "text", "text": HOSTILE}])]
    code, out, err = run(["--workspace", str(ws)], demo_env(), lines)
    assert code == 1 and err.count("[error] input") == 2 and err.count("[done]") == 2
    for stream in (out, err):
        assert ESC not in stream and "\x07" not in stream and "\u202e" not in stream
    code, out, err = run(["--workspace", str(ws), "--output-format", "stream-json"], demo_env(), lines)
    assert ESC not in out + err and "\u202e" not in out and "\x07" not in out
    started = [e for e in events(out) if e["type"] == "turn_started"]
    assert started[0]["prompt"] == f"look at {HOSTILE}"             # the JSON keeps the exact text, escaped


def test_undecodable_bytes_become_replacement_characters(tmp_path):
    ws = make_workspace(tmp_path)
    args = build_parser().parse_args(["--headless", "--input-format", "stream-json", "--workspace", str(ws),
                                      "--output-format", "stream-json"])
    raw = io.TextIOWrapper(io.BytesIO(b'{"type":"user","message":{"role":"user","content":"caf\xe9"}}\n'))
    out = io.StringIO()
    assert headless_main(args, stdin=raw, stdout=out, stderr=io.StringIO(), environ=demo_env()) == 0
    assert next(e for e in events(out.getvalue()) if e["type"] == "turn_started")["prompt"] == "caf\ufffd"


# ---- usage -------------------------------------------------------------------------------------------

def test_usage_errors(tmp_path, capsys):
    ws = make_workspace(tmp_path)
    args = build_parser().parse_args(["--headless", "--input-format", "stream-json", "-p", "x", "--workspace", str(ws)])
    err = io.StringIO()
    assert headless_main(args, stdin=io.StringIO(""), stdout=io.StringIO(), stderr=err, environ=demo_env()) == 2
    assert "drop -p" in err.getvalue()
    args = build_parser().parse_args(["--headless", "--input-format", "stream-json", "--continue", "--compact"])
    err = io.StringIO()
    assert headless_main(args, stdin=io.StringIO(""), stdout=io.StringIO(), stderr=err, environ=demo_env()) == 2
    with pytest.raises(SystemExit) as e:
        cli_main(["--input-format", "stream-json"])
    assert e.value.code == 2 and "--input-format is for --headless" in capsys.readouterr().err
    assert build_parser().parse_args(["--headless"]).input_format == "text"      # today's behaviour by default


def test_help_documents_the_input_format(capsys):
    with pytest.raises(SystemExit):
        cli_main(["--help"])
    out = capsys.readouterr().out
    assert "--input-format {text,stream-json}" in out and '{"type":"user","message"' in out.replace("\n", "")


# ---- a script driving one process, prompt after prompt -----------------------------------------------

def _spawn(argv, env):
    full_env = {**{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_"))}, **env}
    return subprocess.Popen([sys.executable, "-m", "app.cli", "--headless", "--input-format", "stream-json", *argv],
                            cwd=str(ROOT), env=full_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, bufsize=1)


def _read_result(proc) -> dict:
    while True:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        d = json.loads(line)
        if d["type"] == "result":
            return d


def test_a_script_writes_a_prompt_reads_its_result_then_writes_the_next(tmp_path):
    """Through the real SDK against the fake server, in a process of its own with a pipe on stdin:
    the second prompt is written only once the first turn's result has been read."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        proc = _spawn(["--workspace", str(ws), "--output-format", "stream-json"], env_for(fake))
        try:
            proc.stdin.write(user("first") + "\n")
            proc.stdin.flush()
            first = _read_result(proc)
            proc.stdin.write(user("second") + "\n")
            proc.stdin.flush()
            second = _read_result(proc)
            proc.stdin.close()
            code = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert code == 0, proc.stderr.read()
    assert (first["turns"], second["turns"]) == (1, 2) and first["session_id"] == second["session_id"]
    assert [last_user_text(r) for r in fake.message_requests] == ["first", "second"]


def test_sigint_while_waiting_for_the_next_prompt_stops_at_once(tmp_path):
    ws = make_workspace(tmp_path)
    proc = _spawn(["--workspace", str(ws), "--output-format", "stream-json"], demo_env())
    try:
        proc.stdin.write(user("one") + "\n")
        proc.stdin.flush()
        result = _read_result(proc)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=15)            # stdin is still open: only the signal ends the run
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 130 and "Traceback" not in proc.stderr.read()
    assert result["turns"] == 1
    info = latest_session(project_state_dir(state_root(), ws.resolve()))
    assert info is not None and info.session_id == result["session_id"]
