"""`ctxtui watch <workspace>`: a workspace folder maps to where its session logs are kept."""
from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from agent_core.logs.discover import workspace_sessions
from agent_core.watch.files import wait_for_log
from agent_core.watch.target import WatchError, claude_project_folder, first_log, resolve_target


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


def test_a_folder_without_a_log_is_waited_on_where_its_sessions_will_be(tmp_path):
    env = {"CTXTUI_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    ws = tmp_path / "empty"
    ws.mkdir()
    t = resolve_target(str(ws), env=env)
    assert t.log is None and t.folder == ws.resolve()
    assert t.waiting == (workspace_sessions(ws.resolve(), env), claude_project_folder(ws.resolve(), env), ws.resolve())
    assert first_log(t) is None
    cc = touch(claude_project_folder(ws.resolve(), env) / "5f1e2d3c-0000-4000-8000-000000000001.jsonl")
    found = first_log(t, deep=False)           # the session folders are looked at on every tick
    assert found is not None and found.log == cc.resolve() and found.folder == cc.parent.resolve()


def test_a_log_in_the_folder_given_is_found_by_a_deep_look_only(tmp_path):
    env = {"CTXTUI_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    projects = tmp_path / "projects"
    projects.mkdir()
    t = resolve_target(str(projects), env=env)
    log = touch(projects / "-home-me-p" / "a.jsonl")
    assert first_log(t, deep=False) is None
    found = first_log(t)
    assert found is not None and found.log == log.resolve() and found.folder == projects.resolve()


def test_a_missing_path_is_still_an_error(tmp_path):
    with pytest.raises(WatchError, match="no such file or folder"):
        resolve_target(str(tmp_path / "nope"), env={})


@pytest.mark.slow
async def test_waiting_where_no_folder_exists_yet_ends_with_the_first_log(tmp_path):
    env = {"CTXTUI_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    t = resolve_target(None, cwd=tmp_path / "ws", env=env)     # neither sessions folder exists
    assert t.log is None and not any(f.exists() for f in t.waiting)
    task = asyncio.create_task(wait_for_log(t, tick_ms=20))
    await asyncio.sleep(0.1)
    assert not task.done()
    log = touch(tmp_path / "claude" / "projects" / "-ws" / "a.jsonl")
    found = await asyncio.wait_for(task, 10)
    assert found is not None and found.log == log.resolve()


async def test_waiting_stops_when_asked(tmp_path):
    env = {"CTXTUI_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    stop = asyncio.Event()
    task = asyncio.create_task(wait_for_log(resolve_target(None, cwd=tmp_path, env=env), stop_event=stop,
                                            tick_ms=20))
    stop.set()
    assert await asyncio.wait_for(task, 10) is None
