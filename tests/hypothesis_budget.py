"""How many examples a property test draws: its full count in CI (CI=true, as .ci/run sets it) or with
CTXTUI_SLOW=1, a quarter of it (at least 10) in the default suite a developer runs, which keeps that
suite inside its five minutes while CI still searches as hard as the test asks."""
from __future__ import annotations

import os


def full_search() -> bool:
    return any(os.environ.get(name, "").strip().lower() not in ("", "0", "false")
               for name in ("CI", "CTXTUI_SLOW"))


def examples(n: int) -> int:
    """`n` in CI, a quarter of it (at least 10) by default."""
    return n if full_search() else max(10, n // 4)
