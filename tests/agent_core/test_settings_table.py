"""The settings table drives the command line and the loading: `ctxtui`'s parser has a flag for
each setting that has one, with the table's help, default and variable; a setting added to the
table appears in `--help` and in the parser; `Config`'s defaults are the table's; and for every
setting each source wins over the ones below it (flag > env > .env > user file > default)."""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agent_core import settings_table
from agent_core.config import Config, load_config
from agent_core.setting_parsers import text
from agent_core.settings_table import SETTINGS, Flag, Setting, flag_help, shown_default
from app.cli.main import build_parser

FLAGGED = [s for s in SETTINGS if s.flag is not None]


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {o: a for a in parser._actions for o in a.option_strings}


@pytest.mark.parametrize("s", FLAGGED, ids=lambda s: s.name)
def test_each_flag_is_the_tables(s):
    action = _options(build_parser())[s.flag_name]
    assert action.dest == s.name and action.help == flag_help(s)
    assert f"env {s.env}" in action.help and shown_default(s) in action.help.replace("%%", "%")


def test_help_names_every_flag_and_every_variable():
    text = " ".join(build_parser().format_help().split())
    for s in SETTINGS:
        assert all(v in text for v in s.variables[:1]), s.name
        assert s.flag_name is None or s.flag_name in text, s.name
    assert "CTXTUI_CONFIG" in text


def test_a_setting_added_to_the_table_is_in_the_help_and_the_parser(monkeypatch):
    new = Setting("frobnicate_level", "CTXTUI_FROBNICATE_LEVEL", "a level name", "how hard to frobnicate", text,
                  "gently", flag=Flag("LEVEL"))
    monkeypatch.setattr(settings_table, "SETTINGS", (*SETTINGS, new))
    parser = build_parser()
    help_text = " ".join(parser.format_help().split())
    assert "--frobnicate-level LEVEL how hard to frobnicate (default: gently; env CTXTUI_FROBNICATE_LEVEL)" in help_text
    assert "CTXTUI_FROBNICATE_LEVEL as --frobnicate-level [a level name]" in help_text
    assert parser.parse_args(["--frobnicate-level", "hard"]).frobnicate_level == "hard"
    assert parser.parse_args([]).frobnicate_level is None          # not given: lower sources decide


def test_switches_and_repeated_flags_keep_their_shape():
    args = build_parser().parse_args(["--1m-context", "--allow", "bash", "--allow", "grep"])
    assert args.long_context is True and args.allow == ["bash", "grep"]
    left = build_parser().parse_args([])
    assert left.long_context is None and left.allow == [] and left.disable_collapse is None


def test_config_defaults_are_the_tables(tmp_path):
    c = Config(workspace=tmp_path)
    for s in SETTINGS:
        if s.name != "home":                     # None in the table: the state root, resolved at start
            assert getattr(c, s.name) == s.default, s.name


# ---------------------------------------------------------------- precedence, setting by setting

# Two values for each setting (high wins over low), as text: what a flag, a variable, a .env line
# or a TOML string gives. A setting added to the table needs its pair here.
SAMPLES: dict[str, tuple[str, str]] = {
    "api_key": ("sk-ant-high-0123456789", "sk-ant-low-0123456789"),
    "base_url": ("http://high.example", "http://low.example"),
    "model": ("demo", "claude-nonexistent-low"),
    "context_window": ("50000", "40000"),
    "long_context": ("1", "0"),
    "max_output_tokens": ("1000", "2000"),
    "autocompact_pct": ("70", "60"),
    "disable_autocompact": ("1", "0"),
    "disable_collapse": ("1", "0"),
    "policy": ("cc", "none"),
    "cache_ttl": ("1h", "5m"),
    "engine": ("hybrid", "server"),
    "home": ("/nonexistent-ctxtui/high", "/nonexistent-ctxtui/low"),
    "max_turns": ("3", "4"),
    "max_budget_usd": ("1.5", "2"),
    "allow": ("bash", "grep"),
    "mcp_config": ("/nonexistent-ctxtui/high.json", "/nonexistent-ctxtui/low.json"),
    "mcp_timeout": ("7", "8"),
    "bash_timeout": ("7", "8"),
    "tool_timeout": ("7", "8"),
    "api_connect_timeout": ("7", "8"),
    "api_idle_timeout": ("7", "8"),
    "sandbox": ("ask", "off"),
    "sandbox_network": ("all", "none"),
    "sandbox_hide": ("/opt/high", "/opt/low"),
    "sandbox_write": ("/opt/high", "/opt/low"),
    "theme": ("nord", "dracula"),
    "otel_endpoint": ("https://high.example", "https://low.example"),
    "otel_headers": ("a=high", "a=low"),
    "otel_service_name": ("high", "low"),
}
LAYERS = ("flag", "env", ".env", "user file")


def test_every_setting_read_from_a_variable_has_samples():
    assert set(SAMPLES) == {s.name for s in SETTINGS if s.env}


def _flag_argv(s: Setting, value: str) -> list[str]:
    assert s.flag is not None and s.flag_name is not None
    return [s.flag_name] if s.flag.kind == "switch" else [s.flag_name, value]


def _load_with(s: Setting, layers: dict[str, str], tmp_path: Path) -> Config:
    """`s` set at each of `layers` (layer: value); the workspace trusted, so its .env counts."""
    ws, xdg = tmp_path / "ws", tmp_path / "xdg"
    (xdg / "ctxtui").mkdir(parents=True)
    ws.mkdir()
    environ = {"XDG_CONFIG_HOME": str(xdg)}
    assert s.env is not None
    if "env" in layers:
        environ[s.env] = layers["env"]
    if ".env" in layers:
        (ws / ".env").write_text(f"{s.env}={layers['.env']}\n")
    if "user file" in layers:
        (xdg / "ctxtui" / "config.toml").write_text(f"{s.name} = {layers['user file']!r}\n".replace("'", '"'))
    args = build_parser().parse_args([*(_flag_argv(s, layers["flag"]) if "flag" in layers else []), "--trust"])
    return load_config(args, environ, ws)


@pytest.mark.parametrize(("name", "top"), [(name, top) for name in sorted(SAMPLES) for top in LAYERS
                                           if top != "flag" or settings_table.BY_NAME[name].flag is not None])
def test_each_source_wins_over_the_ones_below(name, top, tmp_path):
    s = settings_table.BY_NAME[name]
    high, low = SAMPLES[name]
    below = LAYERS[LAYERS.index(top) + 1:]
    c = _load_with(s, {top: high, **{layer: low for layer in below}}, tmp_path)
    expected = s.parse(True if top == "flag" and s.flag is not None and s.flag.kind == "switch" else high)
    assert getattr(c, name) == (expected.absolute() if isinstance(expected, Path) else expected)
    assert c.sources[name] == top


def test_an_untrusted_dotenv_is_ignored_for_a_sensitive_setting(tmp_path):
    """The variable is reported, and the setting keeps its default: the user file's value is not
    taken in its place (the rule load_config has always had)."""
    ws, xdg = tmp_path / "ws", tmp_path / "xdg"
    (xdg / "ctxtui").mkdir(parents=True)
    ws.mkdir()
    (ws / ".env").write_text("CTXTUI_ALLOW=bash\nCTXTUI_MAX_TURNS=3\n")
    (xdg / "ctxtui" / "config.toml").write_text('allow = "grep"\n')
    c = load_config(None, {"XDG_CONFIG_HOME": str(xdg)}, ws)
    assert c.ignored == ("CTXTUI_ALLOW",) and c.allow == () and c.sources["allow"] == "default"
    assert c.max_turns == 3 and c.sources["max_turns"] == ".env"      # not sensitive: taken
