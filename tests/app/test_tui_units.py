"""The TUI's screen-free parts: slash commands, prompt history, log listing and parsing."""
from __future__ import annotations

import json
import os
import threading

import pytest

from agent_core.logs.discover import list_logs
from app.tui import commands
from app import format as fmt
from agent_core.logs import transcript_files as logfiles
from app.tui.screens.permission import call_preview
from app.tui.widgets.prompt import PromptHistory, _common_prefix


# ----- slash commands ------------------------------------------------------------------------
def test_parse_commands_with_and_without_argument():
    assert commands.parse("/compact") == commands.Parsed("compact", "")
    assert commands.parse("  /compact  keep the test plan ") == commands.Parsed("compact", "keep the test plan")
    assert commands.parse("/MODEL demo") == commands.Parsed("model", "demo")


def test_unknown_command_names_the_known_ones():
    with pytest.raises(commands.CommandError) as e:
        commands.parse("/compcat")
    assert "/compact" in str(e.value) and "/transcripts" in str(e.value)


def test_model_without_a_name_opens_the_picker():
    """/model used to need a NAME; alone it now opens the picker (tests/app/test_model_picker.py)."""
    assert commands.parse("/model") == commands.Parsed("model", "")


def test_every_issue_command_exists():
    assert {c.name for c in commands.COMMANDS} == {"compact", "context", "cost", "clear", "model", "resume",
                                                    "transcripts", "wait", "help", "threshold", "mcp", "rewind", "diff",
                                                        "sandbox"}


def test_completion():
    assert commands.complete("/tr") == ["/transcripts"]
    assert commands.complete("/co") == ["/compact ", "/context", "/cost"]
    assert commands.complete("/m") == ["/mcp", "/model "]
    assert commands.complete("/rew") == ["/rewind"]
    assert commands.complete("/compact x") == []
    assert commands.complete("hello") == []
    assert "/compact [--preview] [focus]" in commands.hint("/c")
    assert commands.hint("plain text") == ""
    assert _common_prefix(["/compact ", "/context", "/cost"]) == "/co"


# ----- prompt history ------------------------------------------------------------------------
def test_history_walks_back_and_returns_to_the_draft():
    h = PromptHistory()
    for t in ("one", "two", "three"):
        h.add(t)
    assert h.previous("draft") == "three"
    assert h.previous("three") == "two"
    assert h.previous("two") == "one"
    assert h.previous("one") is None
    assert h.next() == "two"
    assert h.next() == "three"
    assert h.next() == "draft"
    assert h.next() is None


def test_history_skips_repeats_and_is_bounded():
    h = PromptHistory(limit=3)
    for t in ("a", "a", "b", "c", "d"):
        h.add(t)
    assert h.items == ["b", "c", "d"]


# ----- formatting ------------------------------------------------------------------------------
def test_format_helpers():
    assert fmt.tokens(1234567) == "1,234,567"
    assert fmt.short_tokens(12_345) == "12k" and fmt.short_tokens(1_500) == "1.5k"
    assert fmt.usd(None) == "?" and fmt.usd(1.5) == "$1.50" and fmt.usd(0.0012) == "$0.0012"
    assert fmt.duration(0.25) == "250ms" and fmt.duration(75) == "1m15s"
    assert fmt.one_line("a\nb  c", 10) == "a b c"
    assert fmt.one_line("x" * 20, 5) == "xxxx…"


def test_permission_preview_shows_command_diff_and_content():
    assert "$ rm -rf build" in call_preview("bash", {"command": "rm -rf build"}).plain
    diff = call_preview("edit_file", {"path": "a.py", "old_string": "x = 1\n", "new_string": "x = 2\n"}).plain
    assert "-x = 1" in diff and "+x = 2" in diff and "a/a.py" in diff
    body = call_preview("write_file", {"path": "n.txt", "content": "hello\nworld"}).plain
    assert "n.txt" in body and "hello" in body


# ----- log files -------------------------------------------------------------------------------
def _write_jsonl(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_scan_lists_sessions_transcripts_and_claude_logs(tmp_path):
    sessions = tmp_path / ".ctxtui" / "sessions"
    claude = tmp_path / "claude" / "projects"
    _write_jsonl(sessions / "20260101T000000-abcdef.jsonl", [{"t": "meta"}])
    _write_jsonl(sessions / "20260101T000000-abcdef" / "transcripts" / "20260101T000100-auto.jsonl", [{}])
    _write_jsonl(claude / "-home-me-proj" / "0b1c.jsonl", [{"type": "user"}])
    (sessions / "20260101T000000-abcdef" / "tool-results").mkdir(parents=True)
    (sessions / "20260101T000000-abcdef" / "tool-results" / "x.txt").write_text("not a log")
    files = list_logs(sessions, claude)
    kinds = sorted((f.kind, f.group, f.name) for f in files)
    assert kinds == [("claude", "-home-me-proj", "0b1c.jsonl"),
                     ("session", "20260101T000000-abcdef", "20260101T000000-abcdef.jsonl"),
                     ("transcript", "20260101T000000-abcdef", "20260101T000100-auto.jsonl")]
    assert list_logs(tmp_path / "missing", None) == []
    assert not (tmp_path / "missing").exists()


def test_parse_claude_code_records():
    boundary = logfiles.parse_line(1, json.dumps({"type": "system", "subtype": "compact_boundary",
                                                  "compactMetadata": {"trigger": "auto", "preTokens": 160000},
                                                  "timestamp": "2026-01-01T10:11:12.000Z"}))
    assert boundary.boundary and boundary.kind == "compaction" and "160000" in boundary.summary
    assert boundary.time == "10:11:12"
    summary = logfiles.parse_line(2, json.dumps({"type": "user", "isCompactSummary": True,
                                                 "message": {"role": "user", "content": "This session is..."}}))
    assert summary.kind == "summary"
    tool = logfiles.parse_line(3, json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "ls"}}]}}))
    assert tool.kind == "tool" and "Bash" in tool.text
    think = logfiles.parse_line(4, json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm"}]}}))
    assert think.kind == "thinking"


def test_parse_ctxtui_records():
    entry = {"uuid": "u", "kind": "message", "timestamp": 0,
             "message": {"role": "assistant", "content": [{"type": "text", "text": "Hello there"}]}}
    rec = logfiles.parse_line(1, json.dumps({"t": "entry", "entry": entry}))
    assert rec.kind == "assistant" and rec.summary == "Hello there"
    rec = logfiles.parse_line(2, json.dumps(entry))  # transcripts hold bare entries
    assert rec.kind == "assistant"
    b = {"uuid": "b", "kind": "compact_boundary", "timestamp": 0, "message": {"role": "user", "content": "x"},
         "meta": {"layer": "autocompact", "trigger": "auto", "tokens_before": 9000, "tokens_after": 2000}}
    rec = logfiles.parse_line(3, json.dumps(b))
    assert rec.boundary and "9000 → 2000" in rec.summary
    ev = logfiles.parse_line(4, json.dumps({"t": "event", "at": 0, "event": {
        "type": "compaction", "layer": "snip", "trigger": "auto", "tokens_before": 5, "tokens_after": 3}}))
    assert ev.boundary and "snip" in ev.summary
    assert logfiles.parse_line(5, "   ") is None
    cut = logfiles.parse_line(6, '{"t": "entry", "entry": {')
    assert cut.kind == "other" and "unreadable" in cut.summary


def test_load_hands_over_batches_and_waits_at_the_gate(tmp_path):
    path = tmp_path / "log.jsonl"
    _write_jsonl(path, [{"type": "user", "message": {"role": "user", "content": f"m{i}"}} for i in range(25)])
    got: list[int] = []
    gate = threading.Event()
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(
        logfiles.load(path, lambda b, done: got.append(len(b)), batch_size=10, gate=gate)))
    t.start()
    t.join(0.2)
    assert t.is_alive() and got == [10]     # held after the first batch
    gate.set()
    t.join(5)
    assert not t.is_alive()
    assert got == [10, 10, 5] and result == [25]


def test_load_stops_when_cancelled(tmp_path):
    path = tmp_path / "log.jsonl"
    _write_jsonl(path, [{"n": i} for i in range(50)])
    got: list[int] = []
    n = logfiles.load(path, lambda b, done: got.append(len(b)), batch_size=10, cancelled=lambda: len(got) >= 2)
    assert n == 20 and got == [10, 10]


def test_is_log_path():
    assert logfiles.is_log_path("/x/y.jsonl") and not logfiles.is_log_path(os.path.join("x", "y.txt"))
