"""run_replay on a shared real Claude Code session (read-only; skipped when absent)."""
from __future__ import annotations

from pathlib import Path

import pytest

from agent_core.replay.options import make_options
from agent_core.replay.runner import run_replay

PROJECT = Path(__file__).resolve().parents[3] / ".." / "shared" / "reference" / "real-cc-sessions" / "projects" / \
    "-home-dev-spotter"
LONG = PROJECT / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"

pytestmark = pytest.mark.skipif(not LONG.is_file(), reason="shared real sessions not present")


def test_a_real_session_at_a_60k_window():
    report = run_replay(make_options([str(LONG)], window=60_000)).to_json()
    main = next(s for s in report["sessions"] if s["agent_id"] is None)
    assert main["summary_source"] == "log"                      # sized from the log's own compaction
    v = main["validation"]
    assert v["cache_read_error_pct"] is not None and v["cache_read_error_pct"] < 5.0
    p = main["policies"]
    assert p["none"]["overflows"] > 0
    assert p["cc"]["overflows"] == 0 and p["cc"]["compactions"].get("autocompact", 0) >= 1
    assert p["ctxtui"]["overflows"] == 0 and sum(p["ctxtui"]["compactions"].values()) >= 1
    assert max(p["ctxtui"]["series"]["context"]) <= 60_000
    # nothing compacted keeps every reference the recorded answers used, at most
    assert p["cc"]["references_kept"] <= p["none"]["references_kept"]
    assert p["ctxtui"]["references_kept"] <= p["none"]["references_kept"]
