"""Shared fixtures. The fake Messages API server (tests/fake_anthropic) runs on loopback only."""
from __future__ import annotations

import os
import time

import pytest

from tests.fake_anthropic import FakeAnthropic


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
