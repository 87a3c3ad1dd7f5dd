"""Start-up (issue 23): nothing loads the `anthropic` SDK (a second or more to import) until a real
model is used. The demo never loads it, headless or in the TUI; with a real model headless prints
its first event before the SDK has loaded. Each check runs in a fresh interpreter
(tests/startup_probe.py); the figures are bench/startup.py's."""
from __future__ import annotations

import json

from tests.agent_helpers import MODEL, SECRET, make_workspace, user_dirs
from tests.fake_anthropic import FakeAnthropic, echo_responder
from tests.startup_probe import clean_env, probe


def test_the_modules_a_run_starts_from_do_not_import_the_sdk():
    r = probe("import", "app.cli.main", "app.cli.headless", "agent_core.loop.factory",
              "agent_core.providers.anthropic_client", "agent_core.providers.errors", "app.tui.launch",
              env=clean_env(**user_dirs()))
    assert r["returncode"] == 0, r["stderr"][-2000:]
    assert r["imported"]["sdk_loaded"] is False and r["sdk_imported"] is None


def test_headless_demo_turn_never_imports_the_sdk(tmp_path):
    ws = make_workspace(tmp_path)
    r = probe("headless", "--headless", "-p", "explore this project", "--workspace", str(ws),
              "--output-format", "stream-json", env=clean_env(**user_dirs()))
    assert r["returncode"] == 0 and r["rc"] == 0, r["stderr"][-2000:]
    result = json.loads(r["stdout"].splitlines()[-1])
    assert result["stop_reason"] == "end_turn" and result["turns"] == 1
    assert "No ANTHROPIC_API_KEY" in r["stdout"]          # the demo, chosen for want of a key
    assert r["exit"]["sdk_loaded"] is False and r["sdk_imported"] is None


def test_headless_stream_of_demo_prompts_never_imports_the_sdk(tmp_path):
    ws = make_workspace(tmp_path)
    lines = "".join(json.dumps({"type": "user", "message": {"role": "user", "content": p}}) + "\n"
                    for p in ("explore", "and the tests"))
    r = probe("headless", "--headless", "--input-format", "stream-json", "--workspace", str(ws),
              "--output-format", "stream-json", "--model", "demo", env=clean_env(**user_dirs()), stdin=lines)
    assert r["rc"] == 0, r["stderr"][-2000:]
    assert [json.loads(x)["turns"] for x in r["stdout"].splitlines() if '"type": "result"' in x] == [1, 2]
    assert r["exit"]["sdk_loaded"] is False and r["sdk_imported"] is None


def test_headless_with_a_real_model_prints_its_first_event_before_the_sdk_loads(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        env = clean_env(**user_dirs(), ANTHROPIC_API_KEY=SECRET, ANTHROPIC_BASE_URL=fake.base_url, CTXTUI_MODEL=MODEL)
        r = probe("headless", "--headless", "-p", "say hello", "--workspace", str(ws), "--output-format",
                  "stream-json", env=env)
    assert r["rc"] == 0, r["stderr"][-2000:]
    assert len(fake.message_requests) == 1 and "say hello" in r["stdout"]   # the SDK did the call
    first = json.loads(r["stdout"].splitlines()[0])
    assert first["type"] == "context"
    assert r["first"]["sdk_loaded"] is False and r["context"]["sdk_loaded"] is False
    assert r["sdk_imported"] is not None and r["sdk_imported"] > r["first"]["t"]
    assert r["exit"]["sdk_loaded"] is True


def test_tui_on_the_demo_paints_and_runs_a_turn_without_the_sdk(tmp_path):
    ws = make_workspace(tmp_path)
    env = clean_env(**user_dirs())
    painted = probe("tui", str(ws), env=env)
    assert painted["returncode"] == 0, painted["stderr"][-2000:]
    assert painted["model"] == "demo" and painted["paint"]["sdk_loaded"] is False
    assert painted["paint"]["deferred"] == []       # Markdown, watchfiles, ...: with their first use
    turn = probe("tui-turn", str(ws), env=env)
    assert turn["returncode"] == 0, turn["stderr"][-2000:]
    assert turn["turns"] == 1 and turn["exit"]["sdk_loaded"] is False and turn["sdk_imported"] is None
    # Markdown is loaded in the idle time after the first frame, before the first prompt's answer
    assert "markdown_it" in turn["idle"]["deferred"] and "markdown_it" in turn["exit"]["deferred"]


def test_tui_with_a_real_model_paints_before_the_sdk_loads(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=echo_responder) as fake:
        env = clean_env(**user_dirs(), ANTHROPIC_API_KEY=SECRET, ANTHROPIC_BASE_URL=fake.base_url)
        r = probe("tui", str(ws), MODEL, env=env)
    assert r["returncode"] == 0, r["stderr"][-2000:]
    assert r["model"] == MODEL and r["paint"]["sdk_loaded"] is False and r["sdk_imported"] is None
    assert r["paint"]["deferred"] == []
