"""The replay report's dataclasses (agent_core/replay/report_model.py): `to_json` is the `--json`
object, key for key, and `from_json` reads it back unchanged."""
from __future__ import annotations

import json

from agent_core.replay.options import make_options
from agent_core.replay.report_model import Marker, ReplayReport, Total
from agent_core.replay.runner import run_replay
from agent_core.replay.synthetic import generate

SESSION_KEYS = ["path", "model", "session_id", "agent_id", "source", "requests", "window", "skipped_lines",
                "summary_tokens", "summary_source", "logged_cost_usd", "recorded_cost_usd", "recorded_source",
                "claude_code_cost_usd", "validation", "cache_doctor", "policies"]
POLICY_KEYS = ["cost_usd", "cost_by_bucket", "compaction_cost_usd", "tokens_by_bucket", "overflows", "compactions",
               "cache_hit_rate", "user_messages_kept", "user_messages_total", "references_kept",
               "references_total", "content_kept", "content_total", "rereads", "rereads_logged", "reread_usd",
               "net_cost_usd", "summary_calls", "refusals", "unpriced_models", "series"]


def test_the_json_form_keeps_its_keys_and_reads_back_unchanged(tmp_path):
    options = make_options([str(tmp_path)], ["nocollapse:CTXTUI_DISABLE_COLLAPSE=1"], window=40_000)
    report = run_replay(options, trajectories=[generate(80, seed=5)])
    data = report.to_json()
    assert list(data) == ["sessions", "totals", "window", "ttl", "limits", "skipped_files"]
    (s,) = data["sessions"]
    assert list(s) == SESSION_KEYS
    assert s["validation"] == {"cache_read_error_pct": None, "cache_write_error_pct": None}   # synthetic
    for p in s["policies"].values():
        assert list(p) == POLICY_KEYS and list(p["series"]) == ["context", "cost_cum", "markers"]
    assert all(isinstance(m, Marker) for p in report.sessions[0].policies.values() for m in p.markers)
    assert isinstance(report.totals["cc"], Total)
    back = ReplayReport.from_json(json.loads(json.dumps(data)))
    assert back == report and json.dumps(back.to_json()) == json.dumps(data)
