"""The @-mention picker's file list: gitignore honoured in a repository, a walk without one,
ctxtui's state and the skipped folders left out, hostile names kept as they are (the picker
escapes them), and the cap."""
from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from agent_core.mentions.workspace_files import list_files
from agent_core.security.visible_text import one_line

HAS_GIT = shutil.which("git") is not None


def _git(ws, *args):
    subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(ws)})


def _tree(ws):
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_text("print(1)\n")
    (ws / "README.md").write_text("hi\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.bin").write_text("x")
    (ws / "debug.log").write_text("x")
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "dep.js").write_text("x")
    (ws / ".ctxtui").mkdir()
    (ws / ".ctxtui" / "session.jsonl").write_text("{}")


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_a_repository_lists_tracked_and_untracked_files_but_not_ignored_ones(tmp_path):
    _tree(tmp_path)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "README.md")
    _git(tmp_path, "commit", "-q", "-m", "init")
    got = list_files(tmp_path, protected=(tmp_path / ".ctxtui",))
    assert got.source == "git"
    # tracked, untracked; not the ignored build/ and *.log, not node_modules (a skipped folder), not state
    assert got.paths == (".gitignore", "README.md", "src/main.py")
    assert not got.capped


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_a_repository_config_cannot_make_the_listing_run_a_program(tmp_path):
    _tree(tmp_path)
    _git(tmp_path, "init", "-q")
    flag = tmp_path / "ran"
    _git(tmp_path, "config", "core.fsmonitor", f"touch {flag}; false")
    assert "src/main.py" in list_files(tmp_path).paths
    assert not flag.exists()


def test_without_git_a_walk_skips_the_tools_skip_dirs_and_the_state(tmp_path, monkeypatch):
    _tree(tmp_path)
    monkeypatch.setenv("PATH", "/nonexistent")     # no git: the walk
    got = list_files(tmp_path, protected=(tmp_path / ".ctxtui",))
    assert got.source == "walk"
    assert "src/main.py" in got.paths and "README.md" in got.paths
    assert not any(p.startswith(("node_modules/", ".ctxtui/")) for p in got.paths)


def test_the_list_is_capped(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    for i in range(30):
        (tmp_path / f"f{i:02d}.txt").write_text("x")
    got = list_files(tmp_path, cap=10)
    assert len(got.paths) == 10 and got.capped


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_hostile_names_are_listed_as_they_are_and_shown_escaped(tmp_path):
    (tmp_path / "evil\n\x1b[2Kname.txt").write_text("x")
    (tmp_path / "plain.txt").write_text("x")
    _git(tmp_path, "init", "-q")
    got = list_files(tmp_path)
    assert "evil\n\x1b[2Kname.txt" in got.paths        # -z: a newline in a name is not a new entry
    assert len(got.paths) == 2
    assert one_line("evil\n\x1b[2Kname.txt") == "evil␊␛[2Kname.txt"


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_fifty_thousand_files_list_fast(tmp_path):
    for d in range(100):
        folder = tmp_path / f"d{d:03d}"
        folder.mkdir()
        for f in range(500):
            (folder / f"f{f:03d}.py").touch()
    _git(tmp_path, "init", "-q")
    start = time.perf_counter()
    got = list_files(tmp_path)
    assert time.perf_counter() - start < 5.0
    assert got.capped and len(got.paths) == 20_000
