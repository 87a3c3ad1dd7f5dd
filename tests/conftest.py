"""Shared fixtures. The fake Messages API server (tests/fake_anthropic) runs on loopback only."""
from __future__ import annotations

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
