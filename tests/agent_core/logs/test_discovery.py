"""One discovery for every reader of logs: with CLAUDE_CONFIG_DIR pointing at a folder holding a
Claude Code log, the transcript browser, `ctxtui usage` and `ctxtui watch` all find that log, and
resume finds ctxtui's own sessions under CTXTUI_HOME (set for every test by conftest)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from agent_core.logs.discover import (claude_config_dirs, claude_projects_dir, claude_projects_dirs,
                                      claude_projects_root, latest_session, list_logs, list_sessions,
                                      watch_default_folder, workspace_sessions)
from app.cli.usage import main as usage_main
from agent_core.watch.target import resolve_target
from agent_core.sessions.paths import project_state_dir, sessions_dir, state_root
from agent_core.sessions.session_log import SessionLog
from app.tui.launch import build_app
from tests.log_helpers import assistant, user, write_log


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def claude_log(tmp_path: Path, monkeypatch) -> Path:
    config = tmp_path / "claude-config"
    log = write_log(config / "projects" / "-home-me-proj" / "sess-1.jsonl",
                    [user(), assistant("msg-1", "req-1")])
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    return log


def test_claude_config_dir_rule(tmp_path):
    (tmp_path / "projects").mkdir()
    assert claude_projects_dir({"CLAUDE_CONFIG_DIR": str(tmp_path)}) == tmp_path / "projects"
    assert claude_projects_dir({"CLAUDE_CONFIG_DIR": " ", "HOME": "x"}) == Path("x") / ".claude" / "projects"
    assert claude_projects_root({"CLAUDE_CONFIG_DIR": str(tmp_path / "none")}) is None


def test_claude_config_dir_is_a_comma_list_and_both_defaults_are_read(tmp_path):
    """As Claude Code and ccusage read it: `a,b` names two folders; unset, both ~/.config/claude
    and ~/.claude are searched (newer Claude Code versions write to the first)."""
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "projects").mkdir(parents=True)
    (b / "projects").mkdir(parents=True)
    assert claude_config_dirs({"CLAUDE_CONFIG_DIR": f"{a}, {b},"}) == [a, b]
    assert claude_projects_dirs({"CLAUDE_CONFIG_DIR": f"{a},{tmp_path / 'gone'},{b}"}) == [a / "projects",
                                                                                          b / "projects"]
    home = tmp_path / "home"
    (home / ".config" / "claude" / "projects").mkdir(parents=True)
    (home / ".claude" / "projects").mkdir(parents=True)
    assert claude_projects_dirs({"HOME": str(home)}) == [home / ".config" / "claude" / "projects",
                                                         home / ".claude" / "projects"]
    xdg = tmp_path / "xdg"
    assert claude_config_dirs({"HOME": str(home), "XDG_CONFIG_HOME": str(xdg)})[0] == xdg / "claude"


def test_transcript_browser_honours_claude_config_dir(claude_log, workspace):
    app = build_app({"model": "demo"}, workspace=workspace)
    assert app.claude_root == claude_log.parent.parent
    assert app.sessions_root == workspace_sessions(workspace)
    listed = list_logs(app.sessions_root, app.claude_root)
    assert (claude_log, "claude", "-home-me-proj") in [(f.path, f.kind, f.group) for f in listed]
    assert [f.kind for f in listed].count("session") == 0       # a new session writes its log with its first content


def test_usage_reads_claude_config_dir_by_default(claude_log):
    out, err = io.StringIO(), io.StringIO()
    assert usage_main(["--by", "session", "--json"], stdout=out, stderr=err) == 0, err.getvalue()
    assert "sess-1" in json.dumps(json.loads(out.getvalue()))


def test_watch_follows_claude_config_dir_by_default(claude_log, workspace):
    assert watch_default_folder(workspace) == claude_log.parent.parent
    target = resolve_target(None, cwd=workspace)
    assert target.log == claude_log.resolve()


def test_resume_and_watch_find_ctxtui_sessions_under_ctxtui_home(claude_log, workspace):
    state = project_state_dir(state_root(), workspace.resolve())
    assert workspace_sessions(workspace) == sessions_dir(state)
    log = SessionLog.create(state, {"model": "demo", "workspace": str(workspace)})
    log.close()
    assert [s.session_id for s in list_sessions(state)] == [log.session_id]
    assert latest_session(state).session_id == log.session_id
    # watch prefers this workspace's own sessions over Claude Code's
    assert resolve_target(None, cwd=workspace).log == log.path.resolve()
    # --continue resumes it
    app = build_app({"model": "demo"}, workspace=workspace, continue_=True)
    assert app.agent.session_id == log.session_id
