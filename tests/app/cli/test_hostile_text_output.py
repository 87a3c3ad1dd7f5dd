"""Issue 21, part 5: a log (or a model) that holds terminal escapes or markup cannot act on the
terminal through ctxtui's plain-stdout commands: `usage` (every report), `replay`'s text, the
status line and headless text output. Each field shows up in its visible form (`␛[2J`, `␛]0;TITLE␇`,
`\\x9b2J`, `⟨U+202E⟩`, markup literally) and the JSON outputs keep the exact text, escaped.

Every test runs the real CLI entry (`app.cli.main.main`) or the headless front-end on tmp_path logs.
"""
from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from app.cli.headless import main as headless_main
from app.cli.main import build_parser, main
from tests.agent_helpers import MODEL, SECRET, make_workspace, user_dirs
from tests.fake_anthropic import FakeAnthropic, reply, tool_use

# What a hostile log holds: erase the screen, set the window title, the C1 form of CSI (some
# terminals obey it like ESC [), Rich markup, and a right-to-left override.
EVIL = "\x1b[2J\x1b]0;TITLE\x07\x9b2J[red]x[/red]\u202e"
EVIL_DIR = "proj\x1b[2J\x1b]0;TITLE\x07\x9b2J[red]x\u202e"      # a folder name (no "/")
EVIL_MODEL = "claude-" + EVIL
SHOWN = ("␛[2J", "␛]0;TITLE␇", "\\x9b2J", "⟨U+202E⟩")
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def assert_visible(text: str, *, markup: bool = True) -> None:
    for raw in RAW:
        assert raw not in text, f"raw {raw!r} reached the terminal"
    for shown in SHOWN:
        assert shown in text, f"{shown!r} not shown"
    if markup:
        assert "[red]x" in text          # markup printed literally, never interpreted


def _usage(inp: int = 3, out: int = 10, read: int = 0, write: int = 0) -> dict:
    return {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0}}


def hostile_log(root: Path) -> Path:
    """A Claude Code log in a project folder with a hostile name, whose model, session id and
    sub-agent id are hostile too: a prompt, a Read, an answer, and one sidechain call."""
    path = root / "projects" / EVIL_DIR / "s1.jsonl"
    path.parent.mkdir(parents=True)
    common = {"sessionId": EVIL, "cwd": "/home/" + EVIL}
    lines = [
        {"type": "user", "timestamp": "2026-02-11T20:00:00Z", "uuid": "u1",
         "message": {"role": "user", "content": "fix the parser in lib/parser.py"}},
        {"type": "assistant", "requestId": "q1", "timestamp": "2026-02-11T20:00:03Z", "uuid": "a1",
         "message": {"id": "m1", "model": EVIL_MODEL, "role": "assistant", "usage": _usage(write=9_000, out=50),
                     "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                                  "input": {"file_path": "lib/parser.py"}}]}},
        {"type": "user", "timestamp": "2026-02-11T20:00:04Z", "uuid": "u2",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                  "content": "def parse(): pass\n" * 100}]}},
        {"type": "assistant", "requestId": "q2", "timestamp": "2026-02-11T20:00:09Z", "uuid": "a2",
         "message": {"id": "m2", "model": EVIL_MODEL, "role": "assistant", "usage": _usage(read=9_000, out=20),
                     "content": [{"type": "text", "text": "Fixed."}]}},
        {"type": "user", "isSidechain": True, "agentId": EVIL, "timestamp": "2026-02-11T20:00:10Z",
         "uuid": "su1", "message": {"role": "user", "content": "look around"}},
        {"type": "assistant", "isSidechain": True, "agentId": EVIL, "requestId": "q3",
         "timestamp": "2026-02-11T20:00:12Z", "uuid": "sa1",
         "message": {"id": "m3", "model": EVIL_MODEL, "role": "assistant", "usage": _usage(write=2_000),
                     "content": [{"type": "text", "text": "Looked."}]}},
    ]
    path.write_text("".join(json.dumps({**common, **x}) + "\n" for x in lines))
    return path


@pytest.fixture
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")       # the full layout: every field whole


# ---- ctxtui usage -----------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [[], ["--by", "session"], ["--by", "day"], ["daily"], ["weekly"], ["monthly"],
                                  ["session"], ["blocks"], ["blocks", "--breakdown"], ["session", "--breakdown"]],
                         ids=lambda a: " ".join(a) or "summary")
def test_usage_reports_show_escapes_in_a_log_visibly(tmp_path, capsys, wide, argv):
    log = hostile_log(tmp_path)
    name, rest = (argv[:1], argv[1:]) if argv and not argv[0].startswith("-") else ([], argv)
    assert main(["usage", *name, str(log.parent.parent), *rest]) == 0
    out, err = capsys.readouterr()
    assert_visible(out + err)
    for raw in RAW:
        assert raw not in err


def test_usage_session_report_shows_the_project_folder_and_session_id(tmp_path, capsys, wide):
    log = hostile_log(tmp_path)
    assert main(["usage", "session", str(log.parent.parent)]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n")[0]
    assert "proj␛[2J␛]0;TITLE␇\\x9b2J[red]x⟨U+202E⟩" in table           # the project column
    assert "␛[2J␛]0;TITLE␇\\x9b2J[red]x[/red]⟨U+202E⟩" in table        # the session and model columns
    widths = {len(line) for line in table.splitlines()[:2]}
    assert len(widths) == 1           # the header and its rule: measured on what is shown


def test_usage_compact_layout_too(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    log = hostile_log(tmp_path)
    for report in ("session", "daily", "blocks"):
        assert main(["usage", report, str(log.parent.parent)]) == 0
        out, err = capsys.readouterr()
        for raw in RAW:
            assert raw not in out + err


def test_usage_json_keeps_the_exact_text_escaped(tmp_path, capsys):
    log = hostile_log(tmp_path)
    assert main(["usage", str(log.parent.parent), "--json"]) == 0
    out = capsys.readouterr().out
    for raw in RAW:
        assert raw not in out
    data = json.loads(out)
    assert EVIL_MODEL in data["by_model"]
    assert data["sessions"][0]["session_id"] == EVIL and data["sessions"][0]["project"] == EVIL_DIR
    assert main(["usage", "session", str(log.parent.parent), "--json"]) == 0
    out = capsys.readouterr().out
    assert not any(raw in out for raw in RAW) and json.loads(out)["sessions"][0]["session_id"] == EVIL


def test_usage_corrupt_line_warning_names_the_file_visibly(tmp_path, capsys, wide):
    log = hostile_log(tmp_path)
    with log.open("a") as f:
        f.write('{"type": "user", broken\n')
    assert main(["usage", str(log.parent.parent)]) == 0
    err = capsys.readouterr().err
    assert "skipped 1 corrupt line" in err and "proj␛[2J␛]0;TITLE␇\\x9b2J[red]x⟨U+202E⟩/s1.jsonl:7" in err
    assert not any(raw in err for raw in RAW)


def test_usage_unreadable_file_warning_names_it_visibly(tmp_path, capsys):
    folder = tmp_path / "projects" / EVIL_DIR
    folder.mkdir(parents=True)
    (folder / "s.jsonl").symlink_to("/dev/zero")
    assert main(["usage", str(tmp_path / "projects")]) == 0
    out, err = capsys.readouterr()
    assert "could not read" in err and "proj␛[2J␛]0;TITLE␇\\x9b2J[red]x⟨U+202E⟩/s.jsonl" in err
    assert not any(raw in out + err for raw in RAW)


# ---- ctxtui replay ----------------------------------------------------------------------------

def test_replay_text_shows_escapes_in_a_log_visibly(tmp_path, capsys):
    log = hostile_log(tmp_path)
    assert main(["replay", str(log), "--window", "50000"]) == 0
    out, err = capsys.readouterr()
    assert_visible(out)
    assert not any(raw in err for raw in RAW)
    assert "[␛[2J␛]0;TITLE␇\\x9b2J[red]x[/red]⟨U+202E⟩]" in out        # the sub-agent's id
    assert "  claude-␛[2J" in out                                       # the model line
    assert max(len(line) for line in out.splitlines()) < 100


def test_replay_json_keeps_the_exact_text_escaped(tmp_path, capsys):
    log = hostile_log(tmp_path)
    assert main(["replay", str(log), "--window", "50000", "--json"]) == 0
    out = capsys.readouterr().out
    assert not any(raw in out for raw in RAW)
    report = json.loads(out)
    assert {s["model"] for s in report["sessions"]} == {EVIL_MODEL}
    assert EVIL in {s["agent_id"] for s in report["sessions"]}


def test_replay_usage_error_names_the_path_visibly(tmp_path, capsys):
    missing = tmp_path / (EVIL_DIR + ".jsonl")
    assert main(["replay", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "proj␛[2J␛]0;TITLE␇\\x9b2J[red]x⟨U+202E⟩.jsonl" in err
    assert not any(raw in err for raw in RAW)


# ---- ctxtui statusline ------------------------------------------------------------------------

def _statusline(monkeypatch, capsys, status: dict) -> tuple[str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(status)))
    assert main(["statusline"]) == 0
    return capsys.readouterr()


def test_statusline_model_from_stdin_is_shown_visibly(tmp_path, monkeypatch, capsys):
    log = hostile_log(tmp_path)
    out, err = _statusline(monkeypatch, capsys, {"transcript_path": str(log), "model": {"display_name": EVIL}})
    assert_visible(out)
    assert out.count("\n") == 1 and not any(raw in err for raw in RAW)


def test_statusline_model_from_the_log_is_shown_visibly(tmp_path, monkeypatch, capsys):
    log = hostile_log(tmp_path)
    out, err = _statusline(monkeypatch, capsys, {"transcript_path": str(log)})
    assert_visible(out)
    assert out.startswith("claude-␛[2J") and out.count("\n") == 1
    assert not any(raw in err for raw in RAW)


def test_statusline_bad_stdin_still_prints_a_visible_line(monkeypatch, capsys):
    out, _ = _statusline(monkeypatch, capsys, {"model": {"id": EVIL}})      # no transcript_path
    assert_visible(out)


# ---- ctxtui --headless ------------------------------------------------------------------------

def _headless(argv, fake) -> tuple[int, str, str]:
    environ = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url, "CTXTUI_MODEL": MODEL}
    args = build_parser().parse_args(["--headless", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = headless_main(args, stdin=io.StringIO(""), stdout=out, stderr=err, environ=environ)
    return code, out.getvalue(), err.getvalue()


ANSWER = "line one\n" + EVIL + "\tend\n"


def _script():
    return [reply(tool_use("read_file", {"path": "missing-" + EVIL})), reply(ANSWER)]


def test_headless_text_shows_the_answer_and_tool_notes_visibly(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(_script()) as fake:
        code, out, err = _headless(["-p", "go", "--workspace", str(ws)], fake)
    assert code == 0
    assert_visible(out)
    assert out.startswith("line one\n") and "\tend" in out            # newlines and tabs kept
    assert "[tool] read_file" in err and "[tool error] read_file" in err
    assert not any(raw in err for raw in RAW)
    assert "\\x9b2J" in err and "⟨U+202E⟩" in err


@pytest.mark.parametrize("fmt", ["json", "stream-json"])
def test_headless_json_formats_escape_c1_and_bidi_and_keep_the_text(tmp_path, fmt):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(_script()) as fake:
        code, out, err = _headless(["-p", "go", "--workspace", str(ws), "--output-format", fmt], fake)
    assert code == 0
    assert not any(raw in out + err for raw in RAW)
    objs = [json.loads(line) for line in out.splitlines()]
    if fmt == "json":
        assert objs[0]["text"] == ANSWER                                  # exact, once decoded
    else:
        assert "".join(o["text"] for o in objs if o["type"] == "text_delta") == ANSWER
        call = next(o for o in objs if o["type"] == "tool_call")
        assert call["input"]["path"] == "missing-" + EVIL


# ---- ctxtui watch's errors --------------------------------------------------------------------

def test_watch_error_names_a_hostile_folder_visibly(tmp_path, capsys):
    folder = tmp_path / EVIL_DIR
    folder.mkdir()
    fifo = folder / "s.jsonl"
    os.mkfifo(fifo)
    assert main(["watch", str(fifo)]) == 2
    err = capsys.readouterr().err
    assert "proj␛[2J␛]0;TITLE␇\\x9b2J[red]x⟨U+202E⟩/s.jsonl: not a regular file (a FIFO" in err
    assert not any(raw in err for raw in RAW) and err.count("\n") == 1
