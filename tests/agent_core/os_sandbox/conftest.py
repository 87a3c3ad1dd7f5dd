"""The sandbox tests' folders live on disk outside /tmp: inside the sandbox /tmp is private, so a
test folder under /tmp would be invisible for the wrong reason."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def disk():
    """A fresh folder under /var/tmp, removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="ctxtui-sbx-test-", dir="/var/tmp"))
    yield base
    shutil.rmtree(base, ignore_errors=True)
