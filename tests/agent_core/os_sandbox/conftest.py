"""The sandbox tests' folders live on disk outside /tmp: inside the sandbox /tmp is private, so a
test folder under /tmp would be invisible for the wrong reason."""
from __future__ import annotations

import pytest

from tests.agent_core.os_sandbox.sandbox_helpers import disk_folder


@pytest.fixture
def disk():
    """A fresh folder under /var/tmp, removed afterwards."""
    with disk_folder() as base:
        yield base
