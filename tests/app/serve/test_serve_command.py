"""`ctxtui serve`'s command line: the process each tab starts is ctxtui itself, its argv a list that
reaches the process word for word however hostile (textual-serve hands a string to /bin/sh), only
commands with a screen are served, and the server never listens beyond loopback."""
from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from app.serve import cli
from app.serve.command import HOME, NotServable, check_servable, ctxtui_argv, shell_command
from app.serve.loopback import NotLoopback, bind, loopback_ip

HOSTILE = ["; touch {pwned}", "$(touch {pwned})", "`touch {pwned}`", "' ; touch {pwned} ; '", "\"; touch {pwned}",
           "a\nb touch {pwned}", "&& touch {pwned}", "| touch {pwned}", "${{IFS}}touch${{IFS}}{pwned}",
           "> {pwned}", "*", "~", "-", "", " ", "\\", "é ünïcode ✓", "--workspace=/x y", "\t"]


def test_hostile_arguments_reach_the_process_word_for_word_and_run_nothing(tmp_path):
    pwned = tmp_path / "pwned"
    words = [w.format(pwned=pwned) for w in HOSTILE]
    echo = [sys.executable, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))", *words]
    command = shell_command(echo)
    # as textual-serve runs it: asyncio.create_subprocess_shell, i.e. /bin/sh -c COMMAND
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == words
    assert not pwned.exists()
    assert command.startswith("exec ")


def test_hostile_arguments_on_the_command_line_stay_one_word_each(tmp_path):
    hostile = "x'; touch /tmp/pwned-by-serve; echo '$(id)`id`\n"
    _, command = cli.parse(["--port", "0", "watch", hostile, "--poll"])
    argv = ctxtui_argv(command, cwd=tmp_path)
    assert argv[-3:] == ["watch", hostile, "--poll"]
    assert shlex.split(shell_command(argv)) == ["exec", *argv]


def test_the_served_command_is_this_python_running_ctxtui(tmp_path):
    argv = ctxtui_argv(["watch", "/some/path"], cwd=tmp_path)
    assert argv == [sys.executable, "-P", "-m", "app.cli", "watch", "/some/path"]


def test_the_current_folder_cannot_shadow_ctxtui(tmp_path):
    """A project with its own app/ package: -P keeps `python -m app.cli` from running it."""
    (tmp_path / "app" / "cli").mkdir(parents=True)
    (tmp_path / "app" / "__init__.py").write_text("raise SystemExit('the project app ran')\n")
    (tmp_path / "app" / "cli" / "__init__.py").write_text("")
    argv = ctxtui_argv(["--version"], cwd=tmp_path)
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("ctxtui "), done.stdout + done.stderr


def test_in_ctxtuis_own_checkout_the_folder_is_kept_on_the_path():
    assert "-P" not in ctxtui_argv([], cwd=HOME)


@pytest.mark.parametrize("args", [[], ["watch"], ["watch", "~/.claude/projects", "--poll"], ["--workspace", "/x"],
                                  ["--model", "demo", "--theme", "nord"], ["--workspace", "/x", "--", "--headless"]])
def test_the_tui_and_watch_can_be_served(args):
    check_servable(args)


@pytest.mark.parametrize("args", [["--headless"], ["--head"], ["--headless=1"], ["--help"], ["-h"], ["--version"],
                                  ["--model", "demo", "--headless"], ["usage"], ["statusline"], ["replay", "x"],
                                  ["serve"], ["acp"], ["explain this"]])
def test_commands_without_a_screen_are_refused(args):
    with pytest.raises(NotServable):
        check_servable(args)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST", "127.1.2.3", "::1", "[::1]"])
def test_loopback_hosts_are_accepted(host):
    assert loopback_ip(host) in ("127.0.0.1", "127.1.2.3", "::1")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "8.8.8.8", "example.com",
                                  "localhost.evil.example", "", "::ffff:8.8.8.8", "127.0.0.1.evil.example"])
def test_non_loopback_hosts_are_refused(host):
    with pytest.raises(NotLoopback):
        loopback_ip(host)
    with pytest.raises(NotLoopback):
        bind(host, 0)


def test_the_command_refuses_a_non_loopback_host_before_listening():
    err = io.StringIO()
    assert cli.main(["--host", "0.0.0.0", "--port", "0"], stdout=io.StringIO(), stderr=err) == 2
    assert "not a loopback address" in err.getvalue() and "ssh -L" in err.getvalue()


@pytest.mark.parametrize("argv", [["--port", "70000"], ["--port", "x"], ["usage"], ["--", "--headless"],
                                  ["--workspace", "/x"], ["--bogus"]])
def test_usage_errors_exit_2(argv, capsys):
    assert cli.main(argv) == 2
    assert "ctxtui serve: error:" in capsys.readouterr().err


def test_a_port_in_use_is_a_usage_error():
    taken = bind("127.0.0.1", 0)
    try:
        err = io.StringIO()
        assert cli.main(["--port", str(taken.port)], stdout=io.StringIO(), stderr=err) == 2
        assert "cannot listen" in err.getvalue()
    finally:
        taken.sock.close()


def test_the_parsed_forms_name_what_is_served():
    assert cli.parse([])[1] == []
    assert cli.parse(["--port", "0", "watch", "p", "--poll"])[1] == ["watch", "p", "--poll"]
    assert cli.parse(["--", "--workspace", "w"])[1] == ["--workspace", "w"]
    assert cli.parse(["--", "watch", "p"])[1] == ["watch", "p"]
    assert cli.parse(["--port", "0"])[0].port == 0


def test_help_covers_the_forms_the_url_and_ssh(capsys):
    assert cli.main(["--help"]) == 0
    text = capsys.readouterr().out
    for needle in ("--port", "--host", "watch", "-- OPTIONS", "ssh -L", "403", "token", "exit codes"):
        assert needle in text, needle


def test_help_loads_neither_textual_rich_nor_textual_serve():
    code = ("import sys, contextlib, io\n"
            "from app.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['serve', '--help']) == 0\n"
            "print(sorted(m for m in ('textual', 'rich', 'textual_serve', 'aiohttp') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(HOME), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
