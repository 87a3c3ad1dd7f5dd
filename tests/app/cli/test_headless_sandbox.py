"""Issue 50 headless: `--sandbox auto-allow` runs the model's bash inside the sandbox without
`--allow bash` (a planted key stays unreadable; the model is told a failure may be the sandbox's);
`--sandbox ask` keeps the denial of a run nobody can answer; a sandbox the user chose that cannot
run is said once on stderr and bash is denied — `--allow bash` included — never run unconfined."""
from __future__ import annotations

import io

import pytest

from agent_core.os_sandbox import probe
from app.cli.headless import main as headless_main
from app.cli.main import build_parser
from tests.agent_core.os_sandbox.sandbox_helpers import planted_home, require_bwrap
from tests.agent_helpers import MODEL, SECRET, make_workspace, user_dirs
from tests.fake_anthropic import FakeAnthropic, reply, tool_use


@pytest.fixture
def on_disk(monkeypatch):
    with planted_home(monkeypatch, "ctxtui-sbx-headless-") as (ws, home):
        yield make_workspace(ws), home


def run(argv: list[str], base_url: str) -> tuple[int, str]:
    args = build_parser().parse_args(["--headless", "--model", MODEL, *argv])
    err = io.StringIO()
    env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": base_url}
    code = headless_main(args, stdin=io.StringIO(""), stdout=io.StringIO(), stderr=err, environ=env)
    return code, err.getvalue()


def tool_result(fake) -> dict:
    return fake.message_requests[1]["messages"][-1]["content"][0]


def test_auto_allow_runs_bash_inside_without_asking(on_disk):
    require_bwrap()
    ws, home = on_disk
    cmd = f"echo ran; cat {home}/.ssh/id_rsa; touch {home}/planted"
    state = home / ".local" / "state" / "ctxtui"        # on disk, as a user's is (conftest's is under /tmp)
    with FakeAnthropic([reply(tool_use("bash", {"command": cmd})), reply("done")]) as fake:
        code, _ = run(["-p", "x", "--workspace", str(ws), "--sandbox", "auto-allow", "--home", str(state)],
                      fake.base_url)
        sent = tool_result(fake)
    assert code == 0
    text = sent["content"] if isinstance(sent["content"], str) else sent["content"][0]["text"]
    assert "ran" in text.splitlines(), text            # the sandbox started, its state folders hidden
    assert "--allow bash" not in text, "auto-allow must not ask (and headless would deny)"
    assert "planted-key-material" not in text and not (home / "planted").exists()
    assert "ran in the OS sandbox" in text


def test_ask_still_denies_when_nobody_can_answer(on_disk):
    require_bwrap()
    ws, _ = on_disk
    with FakeAnthropic([reply(tool_use("bash", {"command": "echo hi"})), reply("done")]) as fake:
        code, _ = run(["-p", "x", "--workspace", str(ws), "--sandbox", "ask"], fake.base_url)
        sent = tool_result(fake)
    assert code == 0 and sent["is_error"] and "--allow bash" in str(sent["content"])


def test_an_unusable_sandbox_denies_bash_even_when_allowed(on_disk, monkeypatch):
    ws, _ = on_disk
    monkeypatch.setattr(probe, "check", lambda bwrap=None: probe.Availability(
        False, problem="bubblewrap cannot create namespaces here (No permissions)", fix="Allow user namespaces"))
    marker = ws / "ran.txt"
    with FakeAnthropic([reply(tool_use("bash", {"command": f"touch {marker}"})), reply("done")]) as fake:
        code, err = run(["-p", "x", "--workspace", str(ws), "--sandbox", "auto-allow", "--allow", "bash"],
                        fake.base_url)
        sent = tool_result(fake)
    assert code == 0 and not marker.exists(), "a command ran unconfined although the user chose the sandbox"
    assert sent["is_error"] and "OS sandbox" in str(sent["content"])
    assert err.count("[note] the OS sandbox cannot run") == 1 and "Allow user namespaces" in err
