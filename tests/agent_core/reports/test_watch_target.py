"""`ctxtui watch <workspace>`: a workspace folder maps to where its session logs are kept."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agent_core.logs.discover import workspace_sessions
from agent_core.reports.watch_target import WatchError, claude_project_folder, resolve_target


def touch(path: Path, age: float = 0.0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"type":"user"}\n')
    t = time.time() - age
    os.utime(path, (t, t))
    return path


def test_a_workspace_folder_is_followed_in_ctxtuis_state_folder(tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    env = {"CTXTUI_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    log = touch(workspace_sessions(ws, env) / "20260101T000000-abcdef.jsonl")
    t = resolve_target(str(ws), env=env)
    assert t.log == log.resolve() and t.folder == workspace_sessions(ws, env).resolve()


def test_a_workspace_folder_maps_to_claude_codes_project_folder_when_written_last(tmp_path):
    ws = tmp_path / "my.proj"
    ws.mkdir()
    env = {"CTXTUI_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    touch(workspace_sessions(ws, env) / "20260101T000000-abcdef.jsonl", age=60)
    cc = claude_project_folder(ws.resolve(), env)
    assert cc.parent == tmp_path / "claude" / "projects"
    assert cc.name.endswith("-my-proj") and not set(cc.name) & set("/._")
    log = touch(cc / "5f1e2d3c-0000-4000-8000-000000000001.jsonl")
    assert resolve_target(str(ws), env=env).log == log.resolve()


def test_a_folder_that_is_no_workspace_and_holds_no_log_is_still_an_error(tmp_path):
    env = {"CTXTUI_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    (tmp_path / "empty").mkdir()
    with pytest.raises(WatchError, match="no session log"):
        resolve_target(str(tmp_path / "empty"), env=env)
