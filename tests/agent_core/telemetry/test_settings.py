"""Where telemetry goes, from the config: the variables, a repository's .env kept out, the headers
a secret (never shown, never in the session log's config, never in a tool's environment)."""
from __future__ import annotations

import pytest

from agent_core.config import SETTINGS, VARIABLES, ConfigError, load_config
from agent_core.security.credentials import SECRET_ENV_VARS, credentials_in
from agent_core.security.trust import SENSITIVE
from agent_core.telemetry.settings import parse_headers, telemetry_settings
from agent_core.tools.base import ToolContext
from compaction.scrub import scrub
from tests.agent_helpers import make_workspace, user_dirs

TOKEN = "tok-0123456789abcdefSECRET"
HEADERS = f"authorization=Bearer%20{TOKEN},x-team=ctx"


def test_no_endpoint_means_no_telemetry(tmp_path):
    cfg = load_config({}, environ=user_dirs(), workspace=make_workspace(tmp_path))
    assert cfg.otel_endpoint is None and telemetry_settings(cfg) is None


def test_the_standard_variable_and_ctxtuis_own_one_first(tmp_path):
    ws = make_workspace(tmp_path)
    env = {**user_dirs(), "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}
    s = telemetry_settings(load_config({}, environ=env, workspace=ws))
    assert s is not None and s.url("traces") == "http://collector:4318/v1/traces"
    assert s.url("metrics") == "http://collector:4318/v1/metrics" and s.service_name == "ctxtui"
    cfg = load_config({}, environ={**env, "CTXTUI_OTEL_ENDPOINT": "https://mine:4318", "OTEL_SERVICE_NAME": "dev"},
                      workspace=ws)
    assert cfg.sources["otel_endpoint"] == "env"
    s = telemetry_settings(cfg)
    assert s.endpoint == "https://mine:4318" and s.service_name == "dev"


def test_the_settings_are_listed_for_help_and_docs():
    names = {v[0] for v in VARIABLES}
    assert {"CTXTUI_OTEL_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_SERVICE_NAME"} <= names
    endpoint = next(s for s in SETTINGS if s.name == "otel_endpoint")
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in endpoint.meaning and "OTEL_EXPORTER_OTLP_ENDPOINT" in endpoint.also_env


def test_a_bad_endpoint_names_the_variable(tmp_path):
    with pytest.raises(ConfigError, match="OTEL_EXPORTER_OTLP_ENDPOINT must be an http"):
        load_config({}, environ={**user_dirs(), "OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
                    workspace=make_workspace(tmp_path))


@pytest.mark.parametrize("var", ["CTXTUI_OTEL_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"])
def test_an_untrusted_dotenv_cannot_send_telemetry_anywhere(tmp_path, var):
    ws = make_workspace(tmp_path)
    (ws / ".env").write_text(f"{var}=http://evil.example:4318\nOTEL_EXPORTER_OTLP_HEADERS=a=b\n")
    cfg = load_config({}, environ=user_dirs(), workspace=ws)
    assert cfg.otel_endpoint is None and cfg.otel_headers is None and telemetry_settings(cfg) is None
    assert set(cfg.ignored) == {var, "OTEL_EXPORTER_OTLP_HEADERS"}
    assert "telemetry" in cfg.ignored_message()
    assert {"otel_endpoint", "otel_headers"} <= SENSITIVE
    trusted = load_config({"trust": True}, environ=user_dirs(), workspace=ws)
    assert trusted.otel_endpoint == "http://evil.example:4318" and trusted.ignored == ()


def test_the_headers_are_a_secret(tmp_path):
    ws = make_workspace(tmp_path)
    cfg = load_config({}, environ={**user_dirs(), "CTXTUI_OTEL_ENDPOINT": "http://127.0.0.1:4318",
                                   "OTEL_EXPORTER_OTLP_HEADERS": HEADERS}, workspace=ws)
    s = telemetry_settings(cfg)
    assert s.headers == {"authorization": f"Bearer {TOKEN}", "x-team": "ctx"}
    assert TOKEN not in repr(cfg) and TOKEN not in repr(s) and "otel_headers" not in cfg.public_dict()
    assert TOKEN not in scrub(f"sent Bearer {TOKEN} and {HEADERS}")        # scrubbed wherever it turns up
    assert "OTEL_EXPORTER_OTLP_HEADERS" in SECRET_ENV_VARS
    assert credentials_in({"OTEL_EXPORTER_OTLP_HEADERS": HEADERS}) == {"OTEL_EXPORTER_OTLP_HEADERS": HEADERS}


def test_a_tools_environment_never_holds_the_headers(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", HEADERS)
    monkeypatch.setenv("SOME_VAR", "kept")
    env = ToolContext(make_workspace(tmp_path)).bash_env()
    assert "OTEL_EXPORTER_OTLP_HEADERS" not in env and env.get("SOME_VAR") == "kept"


def test_a_bad_endpoint_with_a_password_never_echoes_it(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_config({}, environ={**user_dirs(), "CTXTUI_OTEL_ENDPOINT": f"ftp://u:{TOKEN}@host"},
                    workspace=make_workspace(tmp_path))
    assert TOKEN not in str(e.value)


def test_header_parsing_skips_what_is_not_a_pair():
    assert parse_headers("a=1, junk ,=x,b = two%2Cthree") == {"a": "1", "b": "two,three"}
    assert parse_headers(None) == {} and parse_headers("") == {}


def test_otel_sdk_disabled_turns_it_off_whatever_the_endpoint(tmp_path):
    env = {**user_dirs(), "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    cfg = load_config({}, environ=env, workspace=make_workspace(tmp_path))
    assert telemetry_settings(cfg, {"OTEL_SDK_DISABLED": "true"}) is None
    assert telemetry_settings(cfg, {"OTEL_SDK_DISABLED": "TRUE "}) is None
    assert telemetry_settings(cfg, {"OTEL_SDK_DISABLED": "false"}) is not None
    assert telemetry_settings(cfg, {}) is not None
