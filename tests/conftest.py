"""Shared fixtures. The fake Messages API server (tests/fake_anthropic) runs on loopback only.

Slow tests (`@pytest.mark.slow`: the demo tour, the wheel build, long sessions through the real SDK)
are skipped by default, so `make test` stays within a few minutes on two cores; they run when CI is
set (CI=true, as .ci/run sets it), when CTXTUI_SLOW=1, or when `-m` names them. Everything:
    CTXTUI_SLOW=1 make test          (or: CTXTUI_SLOW=1 .venv/bin/python -m pytest)
Only the slow ones: .venv/bin/python -m pytest -m slow"""
from __future__ import annotations

import os
import time

import pytest

from compaction import clock
from compaction.scrub import forget_secrets
from tests.fake_anthropic import FakeAnthropic

# `make test` runs the suite on every core (pytest-xdist, `-n auto`). Its workers are started with
# COLUMNS=80 and LINES for their own reports; the tests expect the environment a plain run has
# (no terminal: the full-width tables of `usage`), so a worker drops them.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)


def run_slow_tests(config: pytest.Config) -> bool:
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        return True
    if os.environ.get("CTXTUI_SLOW", "").strip() not in ("", "0"):
        return True
    return "slow" in (config.getoption("markexpr", "") or "")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if run_slow_tests(config):
        return
    skip = pytest.mark.skip(reason="slow: runs in CI, or with CTXTUI_SLOW=1")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def isolated_user_dirs(tmp_path_factory, monkeypatch):
    """No test reads or writes the real user's state or config: ctxtui's state root, the user
    config folder (config file, trusted workspaces) and the XDG state folder point into a fresh
    temporary folder. Tests that need their own set these again."""
    base = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("HOME", str(base / "home"))        # Path.home() too, for environ={} callers
    monkeypatch.setenv("CTXTUI_HOME", str(base / "state" / "ctxtui"))
    monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.delenv("CTXTUI_CONFIG", raising=False)
    yield base
    forget_secrets()        # the scrubber's registry is process-wide: each test starts with none
    clock.reset()           # so is the demo's /wait: each test starts on the wall clock


@pytest.fixture
def fake_anthropic():
    """A running fake API with an empty script and no responder: push() what each test needs."""
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def fake_base_url(fake_anthropic) -> str:
    return fake_anthropic.base_url


@pytest.fixture
def utc():
    """File times and timelines print in local time: pin it to UTC for deterministic snapshots."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = old
    time.tzset()
