"""Configuration precedence and errors (README, "Configuration")."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_core.config import (DEFAULT_MODEL, DEMO_CONTEXT_WINDOW, SETTINGS, VARIABLES, Config, ConfigError,
                               format_variables, load_config)
from agent_core.tool_spec import TOOL_NAMES
from app.cli.main import build_parser

KEY = "sk-ant-test-0123456789abcdef"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment whose user config folder is private to the test."""
    (tmp_path / "xdg" / "ctxtui").mkdir(parents=True)
    return {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def user_file(env: dict[str, str], text: str) -> Path:
    p = Path(env["XDG_CONFIG_HOME"]) / "ctxtui" / "config.toml"
    p.write_text(text)
    return p


def test_defaults_without_key_is_demo(ws, env):
    c = load_config(None, env, ws)
    assert c.model == "demo" and c.is_demo and c.api_key is None
    assert c.workspace == ws.resolve() and c.home == Path.home() / ".local" / "state" / "ctxtui"
    assert ws.resolve() not in c.state_dir.parents      # state never lives in the workspace
    assert c.context_window is None and c.resolved_context_window() == DEMO_CONTEXT_WINDOW
    assert c.disable_autocompact is False and c.allow == () and c.max_turns is None
    assert c.sources["model"] == "default"


def test_key_selects_a_real_model_and_stays_out_of_repr(ws, env):
    c = load_config(None, {**env, "ANTHROPIC_API_KEY": KEY}, ws)
    assert c.model == DEFAULT_MODEL and not c.is_demo
    assert KEY not in repr(c) and KEY not in str(c)
    assert KEY not in repr(c.public_dict()) and c.public_dict()["has_api_key"] is True
    assert c.secret_values() == [KEY]
    assert c.resolved_context_window() > 0


LAYERS = ["flag", "env", ".env", "user file"]


@pytest.mark.parametrize("top", range(len(LAYERS) + 1))
def test_precedence_flag_env_dotenv_user_default(ws, env, top):
    """Layers from `top` downwards are set; the highest of them must win."""
    values = {"flag": 8000, "env": 7000, ".env": 6000, "user file": 5000}
    present = LAYERS[top:]
    cli = {"context_window": values["flag"]} if "flag" in present else {}
    e = dict(env)
    if "env" in present:
        e["CTXTUI_CONTEXT_WINDOW"] = str(values["env"])
    if ".env" in present:
        (ws / ".env").write_text(f"CTXTUI_CONTEXT_WINDOW={values['.env']}\n")
    if "user file" in present:
        user_file(env, f"context_window = {values['user file']}\n")
    c = load_config(cli, e, ws)
    if present:
        assert c.context_window == values[present[0]]
        assert c.sources["context_window"] == present[0]
    else:
        assert c.context_window is None and c.sources["context_window"] == "default"


def test_precedence_applies_per_setting(ws, env):
    (ws / ".env").write_text("CTXTUI_MODEL=from-dotenv\nCTXTUI_THEME=dotenv-theme\nANTHROPIC_API_KEY=" + KEY + "\n")
    user_file(env, 'theme = "user-theme"\nmax_turns = 7\nbash_timeout = 9.5\n[keymap]\nquit = "ctrl+q"\n')
    c = load_config({"model": "from-flag", "trust": True}, {**env, "CTXTUI_THEME": "env-theme"}, ws)
    assert (c.model, c.theme, c.max_turns, c.bash_timeout) == ("from-flag", "env-theme", 7, 9.5)
    assert c.api_key == KEY and c.keymap == {"quit": "ctrl+q"}
    assert c.config_file is not None and c.config_file.name == "config.toml"


def test_dotenv_never_touches_os_environ(ws, env):
    (ws / ".env").write_text("CTXTUI_UNIQUE_MARKER_VAR=1\nCTXTUI_THEME=x\n")
    load_config(None, env, ws)
    assert "CTXTUI_UNIQUE_MARKER_VAR" not in os.environ


def test_empty_env_value_counts_as_unset(ws, env):
    (ws / ".env").write_text("CTXTUI_MAX_OUTPUT_TOKENS=1234\n")
    c = load_config(None, {**env, "CTXTUI_MAX_OUTPUT_TOKENS": "", "ANTHROPIC_API_KEY": "  "}, ws)
    assert c.max_output_tokens == 1234 and c.api_key is None and c.is_demo


BAD = {
    "ANTHROPIC_BASE_URL": "localhost:8080",
    "CTXTUI_CONTEXT_WINDOW": "abc",
    "CTXTUI_1M_CONTEXT": "perhaps",
    "CTXTUI_MAX_OUTPUT_TOKENS": "0",
    "CTXTUI_MCP_TIMEOUT": "-1",
    "CTXTUI_AUTOCOMPACT_PCT": "150",
    "CTXTUI_DISABLE_AUTOCOMPACT": "maybe",
    "CTXTUI_DISABLE_COLLAPSE": "sometimes",
    "CTXTUI_CACHE_TTL": "10m",
    "CTXTUI_POLICY": "claude-code",
    "CTXTUI_ENGINE": "cloud",
    "CTXTUI_MAX_TURNS": "1.5",
    "CTXTUI_MAX_BUDGET_USD": "-2",
    "CTXTUI_ALLOW": "bash,rm_rf",
    "CTXTUI_BASH_TIMEOUT": "soon",
    "CTXTUI_SANDBOX": "sometimes",
    "CTXTUI_SANDBOX_NETWORK": "all,example.com",
    "CTXTUI_SANDBOX_HIDE": "relative/path",
    "CTXTUI_SANDBOX_WRITE": "~nosuchuser-x/../",
    "CTXTUI_TOOL_TIMEOUT": "never",
    "CTXTUI_API_CONNECT_TIMEOUT": "0",
    "CTXTUI_API_IDLE_TIMEOUT": "-5",
    "CTXTUI_OTEL_ENDPOINT": "collector:4318",
}
FREE_TEXT = {"ANTHROPIC_API_KEY", "CTXTUI_MODEL", "CTXTUI_THEME", "CTXTUI_HOME",
             "CTXTUI_MCP_CONFIG",   # a path: whether it can be read is checked when the servers start
             "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_SERVICE_NAME"}   # telemetry's (tests/agent_core/telemetry)


def test_every_checked_variable_has_a_bad_value_case():
    assert {s.env for s in SETTINGS if s.env} - FREE_TEXT == set(BAD)


@pytest.mark.parametrize("var", sorted(BAD))
def test_bad_env_value_names_variable_and_form(ws, env, var):
    setting = next(s for s in SETTINGS if s.env == var)
    with pytest.raises(ConfigError) as ei:
        load_config(None, {**env, var: BAD[var]}, ws)
    msg = str(ei.value)
    assert msg.startswith(var) and setting.form in msg and repr(BAD[var]) in msg


def test_bad_value_message_example(ws, env):
    with pytest.raises(ConfigError, match=r"^CTXTUI_CONTEXT_WINDOW must be a whole number >= 1000 \(got 'abc'\)$"):
        load_config(None, {**env, "CTXTUI_CONTEXT_WINDOW": "abc"}, ws)


def test_bad_dotenv_value_names_variable_and_file(ws, env):
    (ws / ".env").write_text("CTXTUI_AUTOCOMPACT_PCT=lots\n")
    with pytest.raises(ConfigError, match=r"CTXTUI_AUTOCOMPACT_PCT \(in .*\.env\) must be a number in \(0, 100\]"):
        load_config(None, env, ws)


def test_bad_flag_value_names_flag(ws, env):
    with pytest.raises(ConfigError, match=r"^--context-window must be a whole number >= 1000 \(got 10\)"):
        load_config({"context_window": 10}, env, ws)
    with pytest.raises(ConfigError, match=r"^--allow must be tool names"):
        load_config({"allow": ["bash,nope"]}, env, ws)


def test_bad_user_file_value_names_key_and_file(ws, env):
    p = user_file(env, 'context_window = "big"\n')
    with pytest.raises(ConfigError) as ei:
        load_config(None, env, ws)
    assert "context_window" in str(ei.value) and str(p) in str(ei.value)


def test_user_file_unknown_key_and_bad_toml(ws, env):
    user_file(env, "contex_window = 5000\n")
    with pytest.raises(ConfigError, match="unknown setting 'contex_window'"):
        load_config(None, env, ws)
    user_file(env, "this is not toml\n")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_config(None, env, ws)


def test_ctxtui_config_points_at_another_file(ws, env, tmp_path):
    other = tmp_path / "other.toml"
    other.write_text("max_turns = 3\n")
    assert load_config(None, {**env, "CTXTUI_CONFIG": str(other)}, ws).max_turns == 3


def test_home_variants(ws, env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_config(None, {**env, "CTXTUI_HOME": "state"}, ws).home == tmp_path / "state"
    assert load_config(None, {**env, "CTXTUI_HOME": str(tmp_path / "abs")}, ws).home == tmp_path / "abs"
    assert load_config(None, {**env, "XDG_STATE_HOME": str(tmp_path / "xs")}, ws).home == tmp_path / "xs" / "ctxtui"
    f = tmp_path / "a-file"
    f.write_text("")
    with pytest.raises(ConfigError, match="^CTXTUI_HOME must be a folder path"):
        load_config(None, {**env, "CTXTUI_HOME": str(f)}, ws)


def test_missing_workspace(env, tmp_path):
    with pytest.raises(ConfigError, match="^--workspace must be an existing folder"):
        load_config({"workspace": str(tmp_path / "nope")}, env)


def test_values_parsed(ws, env):
    c = load_config(None, {**env, "CTXTUI_AUTOCOMPACT_PCT": "80%", "CTXTUI_DISABLE_AUTOCOMPACT": "Yes",
                           "CTXTUI_ALLOW": "read_file, bash,read_file", "CTXTUI_CONTEXT_WINDOW": "50_000",
                           "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/", "CTXTUI_MODEL": "DEMO"}, ws)
    assert c.autocompact_pct == 80.0 and c.disable_autocompact is True
    assert c.allow == ("read_file", "bash") and c.context_window == 50_000
    assert c.base_url == "http://127.0.0.1:9" and c.is_demo
    assert load_config({"allow": ["all"]}, env, ws).allow == TOOL_NAMES
    b = c.budget()
    assert b.context_window == 50_000 and b.autocompact_enabled is False


def test_argparse_namespace_from_the_real_cli(ws, env):
    args = build_parser().parse_args(["--model", "claude-sonnet-4", "--max-turns", "4", "--max-budget-usd", "0.5",
                                      "--allow", "bash", "--allow", "grep,glob", "--workspace", str(ws),
                                      "--context-window", "40000", "--theme", "nord"])
    c = load_config(args, {**env, "CTXTUI_MODEL": "ignored", "CTXTUI_MAX_TURNS": "9", "ANTHROPIC_API_KEY": KEY})
    assert (c.model, c.max_turns, c.max_budget_usd, c.context_window, c.theme) == (
        "claude-sonnet-4", 4, 0.5, 40_000, "nord")
    assert c.allow == ("bash", "grep", "glob") and c.workspace == ws.resolve()
    # flags left at argparse defaults do not hide lower layers
    c2 = load_config(build_parser().parse_args([]), {**env, "CTXTUI_MAX_TURNS": "9", "CTXTUI_ALLOW": "grep"}, ws)
    assert c2.max_turns == 9 and c2.allow == ("grep",)


def test_variables_table_lists_the_required_names():
    names = {v[0] for v in VARIABLES}
    assert {"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CTXTUI_MODEL", "CTXTUI_CONTEXT_WINDOW",
            "CTXTUI_MAX_OUTPUT_TOKENS", "CTXTUI_AUTOCOMPACT_PCT", "CTXTUI_DISABLE_AUTOCOMPACT",
            "CTXTUI_HOME"} <= names
    assert all(form and meaning for _, form, meaning in VARIABLES)
    text = format_variables()
    assert all(name in text for name in names) and len(text.splitlines()) == len(VARIABLES)


def test_config_constructed_directly_defaults_home_to_the_state_root(tmp_path):
    c = Config(workspace=tmp_path)
    assert c.home == Path(os.environ["CTXTUI_HOME"]) and c.is_demo
    assert c.state_dir.parent == c.home / "projects" and tmp_path not in c.state_dir.parents


# ---------------------------------------------------------------- hostile or broken inputs (issue 10, case 11)

def test_binary_config_file_is_a_clear_error(ws, env):
    user_file(env, "")
    (Path(env["XDG_CONFIG_HOME"]) / "ctxtui" / "config.toml").write_bytes(b"\x00\xff\xfe binary \x89PNG")
    with pytest.raises(ConfigError, match="not UTF-8 text; it must be TOML"):
        load_config(None, env, ws)


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "folder"])
def test_config_file_that_is_not_a_regular_file_is_refused_without_reading(ws, env, tmp_path, kind):
    if kind == "dev-zero":
        target = "/dev/zero"
    elif kind == "fifo":
        target = str(tmp_path / "pipe")
        os.mkfifo(target)          # opening it for reading would block for ever
    else:
        target = str(tmp_path)
    with pytest.raises(ConfigError, match="must be a regular file"):
        load_config(None, {**env, "CTXTUI_CONFIG": target}, ws)


def test_dotenv_that_is_a_fifo_does_not_hang(ws, env):
    os.mkfifo(ws / ".env")
    with pytest.raises(ConfigError, match=r"\.env file must be a regular file"):
        load_config(None, env, ws)


def test_autocompact_pct_10_is_a_working_setting(ws, env):
    """Documented range (0, 100]: 10% used to make the warning mark negative and crash."""
    for window in (None, "30000", "200000"):
        e = {**env, "CTXTUI_AUTOCOMPACT_PCT": "10"} | ({"CTXTUI_CONTEXT_WINDOW": window} if window else {})
        b = load_config(None, e, ws).budget()
        assert 0 < b.warning_threshold < b.error_threshold < b.autocompact_threshold < b.blocking_limit


def test_a_real_model_without_a_key_is_a_config_error(ws, env):
    with pytest.raises(ConfigError,
                       match=r"^CTXTUI_MODEL is 'claude-sonnet-4-5', which needs an API key.*--model demo"):
        load_config(None, {**env, "CTXTUI_MODEL": "claude-sonnet-4-5"}, ws)


def test_password_in_base_url_never_reaches_the_meta(ws, env):
    c = load_config(None, {**env, "ANTHROPIC_API_KEY": KEY,
                           "ANTHROPIC_BASE_URL": "https://bob:hunter2-secret@proxy.example/v1"}, ws)
    shown = repr(c.public_dict())
    assert "hunter2-secret" not in shown and "https://bob:[REDACTED]@proxy.example/v1" in shown


def test_cache_ttl_defaults_to_5m_and_takes_1h(ws, env):
    assert load_config(None, env, ws).cache_ttl == "5m"
    c = load_config(None, {**env, "CTXTUI_CACHE_TTL": "1H"}, ws)
    assert c.cache_ttl == "1h" and c.sources["cache_ttl"] == "env"
    assert "CTXTUI_CACHE_TTL" in format_variables()


def test_cache_ttl_flag_wins_and_a_bad_one_names_the_flag(ws, env):
    args = build_parser().parse_args(["--cache-ttl", "1h"])
    c = load_config(args, {**env, "CTXTUI_CACHE_TTL": "5m"}, ws)
    assert c.cache_ttl == "1h" and c.sources["cache_ttl"] == "flag"
    with pytest.raises(ConfigError) as err:
        load_config(build_parser().parse_args(["--cache-ttl", "2h"]), env, ws)
    assert "--cache-ttl" in str(err.value) and "5m or 1h" in str(err.value)


def test_a_flag_value_is_read_by_its_settings_parser(ws, env):
    """A flag's text is parsed as its variable's is: a bad one names the flag and the form."""
    with pytest.raises(ConfigError, match=r"^--max-turns must be a whole number >= 1 \(got 'abc'\)$"):
        load_config(build_parser().parse_args(["--max-turns", "abc"]), env, ws)
    c = load_config(build_parser().parse_args(["--context-window", "50,000", "--autocompact-pct", "80%",
                                               "--mcp-timeout", "2.5"]), env, ws)
    assert (c.context_window, c.autocompact_pct, c.mcp_timeout) == (50_000, 80.0, 2.5)
    assert c.sources["context_window"] == c.sources["mcp_timeout"] == "flag"
