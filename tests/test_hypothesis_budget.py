"""The property tests' example counts: full in CI, a quarter by default."""
from __future__ import annotations

import pytest

from tests.hypothesis_budget import examples


@pytest.mark.parametrize("env, n, want", [({"CI": "true"}, 100, 100), ({"CTXTUI_SLOW": "1"}, 60, 60),
                                          ({}, 100, 25), ({}, 25, 10), ({"CI": "0"}, 100, 25)])
def test_examples(monkeypatch, env, n, want):
    for name in ("CI", "CTXTUI_SLOW"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert examples(n) == want
