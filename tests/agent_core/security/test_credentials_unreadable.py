"""Issue 21, holes 2 and 3: a repository's `.env` cannot pull a credential out of the user's
environment, no error message echoes one, and no command the model runs can read the key, as
root too: ctxtui starts again without it in its environment and keeps its tool processes from
the capabilities that read another process's memory."""
from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_core.config import ConfigError, load_config
from agent_core.security import credentials
from agent_core.security.process_guard import CAP_SYS_PTRACE
from compaction.scrub import forget_secrets
from tests.agent_helpers import MODEL, SECRET, make_workspace, user_dirs
from tests.fake_anthropic import FakeAnthropic, reply, tool_use

ROOT = Path(__file__).resolve().parents[3]
GITHUB_TOKEN = "ghp_0123456789abcdefghijABCDEFGHIJ012345"


@pytest.fixture(autouse=True)
def _no_secrets_left():
    yield
    forget_secrets()


def _env(**extra: str) -> dict[str, str]:
    return {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "GITHUB_TOKEN": GITHUB_TOKEN, **extra}


# ------------------------------------------------------------------ .env: no interpolation, no echo

def test_dotenv_interpolation_cannot_print_the_key(tmp_path):
    ws = make_workspace(tmp_path)
    (ws / ".env").write_text("CTXTUI_MAX_TURNS=${ANTHROPIC_API_KEY}\n")
    with pytest.raises(ConfigError) as err:
        load_config({}, environ=_env(), workspace=ws)
    assert SECRET not in str(err.value) and "CTXTUI_MAX_TURNS" in str(err.value)


@pytest.mark.parametrize("line", ["CTXTUI_MODEL=claude-${ANTHROPIC_API_KEY}", "CTXTUI_MODEL=claude-${GITHUB_TOKEN}",
                                  "CTXTUI_MODEL=claude-$GITHUB_TOKEN"])
def test_dotenv_values_stay_literal(tmp_path, line):
    ws = make_workspace(tmp_path)
    (ws / ".env").write_text(line + "\n")
    config = load_config({}, environ=_env(), workspace=ws)
    assert SECRET not in config.model and GITHUB_TOKEN not in config.model
    assert config.model == line.split("=", 1)[1]


@pytest.mark.parametrize("value", [GITHUB_TOKEN, "sk-ant-api03-abcdefgh12345678", SECRET])
def test_a_bad_setting_never_echoes_a_credential(tmp_path, value):
    ws = make_workspace(tmp_path)
    (ws / ".env").write_text(f"CTXTUI_MAX_TURNS={value}\n")
    with pytest.raises(ConfigError) as err:
        load_config({}, environ=_env(), workspace=ws)
    assert value not in str(err.value) and "looks like a credential" in str(err.value)


def test_an_ordinary_bad_value_is_still_quoted(tmp_path):
    ws = make_workspace(tmp_path)
    (ws / ".env").write_text("CTXTUI_MAX_TURNS=lots\n")
    with pytest.raises(ConfigError, match="got 'lots'"):
        load_config({}, environ=_env(), workspace=ws)


def test_a_config_error_shows_escapes_instead_of_sending_them(tmp_path):
    """The message names the .env by its path, and the folder's name is the repository's."""
    ws = make_workspace(tmp_path / "clone\x1b]0;OWNED\x07")
    (ws / ".env").write_text("CTXTUI_MAX_TURNS=lots\n")
    with pytest.raises(ConfigError) as err:
        load_config({}, environ=_env(), workspace=ws)
    message = str(err.value)
    assert "\x1b" not in message and "\x07" not in message and "clone␛]0;OWNED␇" in message


# ------------------------------------------------------------------ the hand-over of the credentials

def test_handoff_reexecutes_without_the_key_and_keeps_it_in_memory(tmp_path):
    """The real re-exec: the child's /proc/self/environ has no key, yet the key reached it."""
    probe = ("import os, sys; from agent_core.security import credentials as c; c.shed_from_environment(); "
             "env = open('/proc/self/environ', 'rb').read(); "
             "print(b'ANTHROPIC_API_KEY' in env, os.environ.get('ANTHROPIC_API_KEY'), "
             "c.held().get('ANTHROPIC_API_KEY') == os.environ.get('PROBE_EXPECT'), sys.argv[1:])")
    env = {**os.environ, "ANTHROPIC_API_KEY": SECRET, "PROBE_EXPECT": SECRET, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", probe, "arg1", "arg two"], env=env, capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False None True ['arg1', 'arg two']"


def test_without_credentials_nothing_is_reexecuted(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setattr(os, "execve", lambda *a: pytest.fail("re-executed with nothing to hide"))
    credentials.shed_from_environment(["python"])


def test_a_password_in_the_base_url_is_a_credential():
    found = credentials.credentials_in({"ANTHROPIC_BASE_URL": "https://u:hunter2hunter2@proxy.example/v1"})
    assert list(found) == ["ANTHROPIC_BASE_URL"]
    assert credentials.credentials_in({"ANTHROPIC_BASE_URL": "https://proxy.example/v1"}) == {}


# ------------------------------------------------------------------ a tool, as root, tries to read the key

LEAK_ATTEMPTS = r"""
echo "ENVIRON:$(base64 -w0 /proc/$PPID/environ)"
echo "REV:$(tr '\0' '\n' < /proc/$PPID/environ | rev | tr '\n' ' ')"
echo "SPACED:$(tr '\0' '\n' < /proc/$PPID/environ | sed 's/-/ - /g' | tr '\n' ' ')"
grep CapEff /proc/self/status
CTXTUI_PID=$PPID python3 - <<'PY'
import os
ppid = int(os.environ["CTXTUI_PID"])          # bash's parent: ctxtui, not this python's parent
needle = "SECRET-" + "0123456789"             # never whole in the command, which ctxtui holds too
try:
    maps = open(f"/proc/{ppid}/maps").read().splitlines()
    mem = open(f"/proc/{ppid}/mem", "rb")
except OSError as e:
    print("MEM:denied", type(e).__name__)
else:
    found = False
    for line in maps:
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        try:
            mem.seek(lo)
            if needle.encode() in mem.read(hi - lo):
                found = True
        except (OSError, ValueError, OverflowError):
            pass
    print("MEM:found" if found else "MEM:read-but-absent")
PY
"""


def _tool_results(fake: FakeAnthropic) -> str:
    texts = []
    for body in fake.message_requests:
        for msg in body.get("messages", []):
            for block in msg.get("content", []) if isinstance(msg.get("content"), list) else []:
                if block.get("type") == "tool_result":
                    c = block.get("content")
                    texts.append(c if isinstance(c, str) else json.dumps(c))
    return "\n".join(texts)


def _leaked_forms(text: str) -> list[str]:
    forms = {"raw": SECRET, "reversed": SECRET[::-1], "spaced": SECRET.replace("-", " - "),
             "base64": base64.b64encode(SECRET.encode()).decode()[:24]}
    leaks = [name for name, form in forms.items() if form in text]
    for line in text.splitlines():
        if line.startswith("ENVIRON:"):
            decoded = base64.b64decode(line.removeprefix("ENVIRON:").strip() + "==")
            if SECRET.encode() in decoded:
                leaks.append("environ decoded")
    return leaks


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and capabilities are Linux's")
def test_a_bash_tool_cannot_read_the_key_from_ctxtui(tmp_path):
    """The real command line: `python -m app.cli --headless --allow bash`, key in the environment."""
    ws = make_workspace(tmp_path)
    fake = FakeAnthropic([reply("looking", tool_use("bash", {"command": LEAK_ATTEMPTS})), reply("done")],
                         api_key=SECRET).start()
    try:
        env = {**{k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")},
               **user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url,
               "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-m", "app.cli", "--headless", "--model", MODEL, "--allow", "bash",
                              "--output-format", "json", "-p", "look around"],
                             env=env, cwd=ws, capture_output=True, text=True, timeout=120)
    finally:
        fake.stop()
    assert out.returncode == 0, out.stderr
    results = _tool_results(fake)
    assert "ENVIRON:" in results and "REV:" in results       # the attempts ran
    assert _leaked_forms(results) == []
    assert "MEM:found" not in results
    if os.geteuid() == 0:
        assert "MEM:denied" in results
        cap_eff = next(line for line in results.splitlines() if line.startswith("CapEff"))
        assert not int(cap_eff.split()[1], 16) >> CAP_SYS_PTRACE & 1
    assert SECRET not in out.stdout + out.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_ctxtuis_own_environ_holds_no_key_while_it_runs(tmp_path):
    """Read /proc/<ctxtui>/environ from outside while a bash call keeps it busy."""
    ws = make_workspace(tmp_path)
    fake = FakeAnthropic([reply("wait", tool_use("bash", {"command": "sleep 3"})), reply("done")]).start()
    try:
        env = {**os.environ, **user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url,
               "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen([sys.executable, "-m", "app.cli", "--headless", "--model", MODEL, "--allow", "bash",
                                 "-p", "wait"], env=env, cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        environ = b""
        while time.monotonic() < deadline and proc.poll() is None:
            if fake.message_requests:                      # the re-executed image has sent its request
                environ = Path(f"/proc/{proc.pid}/environ").read_bytes()
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    finally:
        fake.stop()
    assert environ, "ctxtui never reached the API"
    assert SECRET.encode() not in environ and b"ANTHROPIC_API_KEY=" not in environ
