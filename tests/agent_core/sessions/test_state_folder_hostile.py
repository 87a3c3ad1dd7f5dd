"""Issue 21: a state folder that cannot be written, or that is reached through a planted symlink.

Not writable. The tests run as root, for whom `chmod 0500` changes nothing (root writes anyway),
so a folder or log is made unwritable with `chattr +i` (the immutable flag): the kernel then
refuses every write with EPERM, to root too, which is the PermissionError of the report. A test
skips where the flag cannot be set (no chattr, a file system without it, a user without
CAP_LINUX_IMMUTABLE). One more test, which runs anywhere, stands in for a read-only mount by
making `os.open` refuse writes under the state folder with EROFS, as a read-only file system does.

Symlinks. Above the state root a link is followed only when nothing but root could have made it
(see agent_core/sessions/paths.py): a link inside the workspace is refused wherever it sits in
the path, and the links a system has (macOS's /var, Linux's /bin) still work.
"""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent_core.logs.discover import latest_session
from agent_core.sessions import session_log
from agent_core.sessions.paths import UnsafeDir, check_root_path, project_state_dir, sessions_dir, state_root
from app.cli.main import build_parser
from tests.agent_helpers import MODEL, SECRET, make_workspace, user_dirs
from tests.headless_helpers import run_headless as run
from tests.fake_anthropic import FakeAnthropic, echo_responder

ROOT = Path(__file__).resolve().parents[3]


def env_for(fake, **over):
    return {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url, "CTXTUI_MODEL": MODEL,
            **over}


def _state(ws: Path) -> Path:
    return project_state_dir(state_root(), ws.resolve())


@contextmanager
def immutable(path: Path):
    """`chattr +i path` for the block: every write to it is refused, root's too (EPERM)."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed: cannot make a folder unwritable for root")
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot set the immutable flag here: {made.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def _one_session(ws: Path, fake) -> Path:
    code, _, err = run(["-p", "remember 42", "--workspace", str(ws)], env_for(fake))
    assert code == 0, err
    return latest_session(_state(ws)).path


# ---------------------------------------------------------------- not writable

@pytest.mark.slow
def test_continue_with_an_unwritable_log_exits_2_naming_it_without_a_traceback(tmp_path):
    """The report's case, through the real CLI: `--continue` of a session whose log cannot be
    written ended in a PermissionError traceback with status 1."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        log = _one_session(ws, fake)
        sent = len(fake.message_requests)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_"))},
               **env_for(fake)}
        with immutable(log):
            proc = subprocess.run([sys.executable, "-m", "app.cli", "--headless", "--continue", "-p", "hi",
                                   "--workspace", str(ws)], cwd=str(ROOT), env=env, capture_output=True, text=True,
                                  timeout=120)
        assert len(fake.message_requests) == sent       # refused before anything was sent
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "PermissionError" not in proc.stderr
    assert str(log) in proc.stderr and "CTXTUI_HOME" in proc.stderr and "writable" in proc.stderr


@pytest.mark.parametrize("which", ["sessions folder", "session's own folder"])
def test_continue_into_an_unwritable_folder_exits_2(tmp_path, which):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        log = _one_session(ws, fake)
        folder = log.parent if which == "sessions folder" else log.with_suffix("")
        with immutable(folder):
            code, out, err = run(["-p", "hi", "--continue", "--workspace", str(ws)], env_for(fake))
    if which == "sessions folder":
        assert code == 0, err      # a resumed log is appended to in place: nothing new in that folder
    else:
        assert code == 2 and str(folder) in err and "CTXTUI_HOME" in err and out == ""


def test_new_session_in_an_unwritable_folder_is_refused_before_the_first_request(tmp_path):
    """A new session's log is written lazily, with its first record: the folder is tested at
    start, so the run is refused (exit 2) instead of failing mid-turn with a traceback."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        log = _one_session(ws, fake)
        sent = len(fake.message_requests)
        with immutable(log.parent):
            code, out, err = run(["-p", "hi", "--workspace", str(ws)], env_for(fake))
        assert len(fake.message_requests) == sent
    assert code == 2, err
    assert str(log.parent) in err and "Operation not permitted" in err and "CTXTUI_HOME" in err
    assert [p.name for p in log.parent.glob(".write-test-*")] == []


@pytest.mark.parametrize("continue_", [False, True], ids=["new", "continue"])
def test_tui_start_says_it_before_textual_starts(tmp_path, monkeypatch, capsys, continue_):
    import app.tui.launch as app_main

    class NoApp:
        def __init__(self, *a, **k):
            raise AssertionError("Textual must not start when the state folder cannot be written")

    ws = make_workspace(tmp_path)
    code, _, err = run(["-p", "hi", "--workspace", str(ws), "--model", "demo"], user_dirs())
    assert code == 0, err
    monkeypatch.setattr(app_main, "CtxApp", NoApp)
    log = latest_session(_state(ws)).path
    argv = ["--workspace", str(ws), "--model", "demo"] + (["--continue"] if continue_ else [])
    args = build_parser().parse_args(argv)
    with immutable(log if continue_ else log.parent):
        assert app_main.run_tui(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxtui: cannot write ctxtui's session files: ") and "CTXTUI_HOME" in err


def test_a_read_only_file_system_is_a_clear_error(tmp_path, monkeypatch):
    """Runs anywhere (no chattr, no root): `os.open` refuses every write below the state folder
    with EROFS, as a read-only mount does; reads still work."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        _one_session(ws, fake)
        real_open = os.open
        below = str(_state(ws))

        def read_only_open(path, flags, *a, **k):
            if str(path).startswith(below) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
            return real_open(path, flags, *a, **k)

        monkeypatch.setattr(session_log.os, "open", read_only_open)
        for argv in (["-p", "hi"], ["-p", "hi", "--continue"]):
            code, out, err = run([*argv, "--workspace", str(ws)], env_for(fake))
            assert code == 2, err
            assert "read-only file system" in err and "CTXTUI_HOME" in err and out == ""


def test_a_symlinked_sessions_folder_is_refused_with_exit_2(tmp_path):
    """Below the root every folder must be real: this was refused already, but as a traceback."""
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        log = _one_session(ws, fake)
        real = log.parent.with_name("sessions.real")
        log.parent.rename(real)
        (real.parent / "sessions").symlink_to(real)
        code, out, err = run(["-p", "hi", "--workspace", str(ws)], env_for(fake))
    assert code == 2 and "is a symlink" in err and out == ""


# ---------------------------------------------------------------- symlinks above the root

def _planted(tmp_path: Path, how: str) -> tuple[dict, Path, Path]:
    """A workspace holding a link to a folder elsewhere, and the environment that reaches the
    state root through it. Returns (environment overrides, the link, the folder it points to)."""
    ws = make_workspace(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = ws / "link"
    if how == "chain":
        (ws / "link2").symlink_to(elsewhere)
        link.symlink_to(ws / "link2")
    elif how == "relative target":
        link.symlink_to(Path("..") / "elsewhere")
    else:
        link.symlink_to(elsewhere)
    env = {"parent": {"CTXTUI_HOME": str(link / "state")},
           "grandparent": {"CTXTUI_HOME": str(link / "a" / "b" / "state")},
           "dot-dot": {"CTXTUI_HOME": str(link / ".." / "state")},
           "chain": {"CTXTUI_HOME": str(link / "state")},
           "relative target": {"CTXTUI_HOME": str(link / "state")},
           "XDG_STATE_HOME": {"CTXTUI_HOME": "", "XDG_STATE_HOME": str(link)},
           "HOME": {"CTXTUI_HOME": "", "XDG_STATE_HOME": "", "HOME": str(link)}}[how]
    return env, link, elsewhere


@pytest.mark.parametrize("how", ["parent", "grandparent", "dot-dot", "chain", "relative target", "XDG_STATE_HOME",
                                 "HOME"])
def test_a_symlink_above_the_state_root_is_refused_not_followed(tmp_path, how):
    env, link, elsewhere = _planted(tmp_path, how)
    ws = link.parent
    with FakeAnthropic(responder=echo_responder) as fake:
        code, out, err = run(["-p", "hi", "--workspace", str(ws)], env_for(fake, **env))
        assert fake.message_requests == []
    assert code == 2, err
    assert "is a symlink" in err and str(link) in err and out == ""
    assert list(elsewhere.iterdir()) == [] and not (tmp_path / "state").exists()   # nothing made through it


def test_the_rule_for_links_above_the_root(tmp_path, monkeypatch):
    """Who could have made the link decides. Needs root, to make links owned by root and by
    someone else; the user ctxtui runs as is played by `os.geteuid`."""
    if os.geteuid() != 0:
        pytest.skip("making links owned by root and by another user needs root")
    base = tmp_path / "sys"
    (base / "real").mkdir(parents=True)
    base.chmod(0o755)
    (base / "rootlink").symlink_to(base / "real")                       # root's, in a folder only root writes
    (base / "open").mkdir(mode=0o777)
    (base / "open").chmod(0o1777)                                       # like /tmp: anyone may add a link
    (base / "open" / "rootlink").symlink_to(base / "real")
    (base / "theirs").mkdir()
    (base / "theirs" / "link").symlink_to(base / "real")
    os.lchown(base / "theirs" / "link", 1000, 1000)                     # a link another user made
    monkeypatch.setattr(os, "geteuid", lambda: 1000)                    # ctxtui runs as an ordinary user
    check_root_path(base / "rootlink" / "state")
    for refused in (base / "open" / "rootlink" / "state", base / "theirs" / "link" / "state"):
        with pytest.raises(UnsafeDir, match="is a symlink"):
            check_root_path(refused)
    monkeypatch.setattr(os, "geteuid", lambda: 0)                       # as root: only links directly in /
    with pytest.raises(UnsafeDir, match="is a symlink"):
        check_root_path(base / "rootlink" / "state")


def test_system_links_directly_in_the_root_folder_are_followed():
    """E.g. macOS's /var -> private/var and /tmp -> private/tmp, Linux's /bin -> usr/bin."""
    links = [p for p in Path("/").iterdir() if p.is_symlink() and p.is_dir() and os.lstat(p).st_uid == 0]
    if not links or os.stat("/").st_mode & 0o022:
        pytest.skip("no root-owned folder link directly in /")
    for link in links:
        check_root_path(link / "some" / "state")      # not created: only the path above is looked at


def test_the_real_folder_behind_a_link_can_be_named_instead(tmp_path):
    env, link, elsewhere = _planted(tmp_path, "parent")
    with FakeAnthropic(responder=echo_responder) as fake:
        code, _, err = run(["-p", "hi", "--workspace", str(link.parent)],
                           env_for(fake, CTXTUI_HOME=str(elsewhere / "state")))
    assert code == 0, err
    assert list(sessions_dir(project_state_dir(elsewhere / "state", link.parent.resolve())).glob("*.jsonl"))
