"""`ctxtui --headless --engine server --output-format stream-json`: a server compaction is printed
with the same event fields as a local one, and the run goes on after it."""
from __future__ import annotations

import pytest

import io
import json

from app.cli.headless import main as headless_main
from app.cli.main import build_parser
from tests.agent_helpers import MODEL, SECRET, make_workspace, user_dirs
from tests.fake_anthropic import FakeAnthropic, reply, tool_use

LOCAL_FIELDS = {"type", "layer", "trigger", "tokens_before", "tokens_after", "duration_s", "transcript_path",
                "action", "timestamp", "cache", "parts", "usage"}


def _run(argv: list[str], environ: dict) -> tuple[int, str, str]:
    args = build_parser().parse_args(["--headless", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = headless_main(args, stdin=io.StringIO(""), stdout=out, stderr=err, environ=environ)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.slow
def test_stream_json_prints_server_compactions_like_local_ones(tmp_path):
    ws = make_workspace(tmp_path)
    calls = {"n": 0}

    def responder(body):
        calls["n"] += 1
        if calls["n"] <= 24:   # long answers (about 5,000 tokens), short results: only a summary makes room
            return reply(f"step {calls['n']}: " + "notes " * 3_300, tool_use("bash", {"command": "echo ok"}),
                         chunk=2_048)
        return reply("finished")

    env = {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "CTXTUI_MODEL": MODEL}
    with FakeAnthropic(responder=responder) as fake:
        code, out, err = _run(["-p", "work through it", "--workspace", str(ws), "--allow", "bash", "--engine",
                               "server", "--context-window", "100000", "--base-url", fake.base_url,
                               "--output-format", "stream-json"], {**env, "ANTHROPIC_BASE_URL": fake.base_url})
        # the messages requests' betas (the head's count carries the token-counting one too)
        betas = {r.headers.get("anthropic-beta") for r in fake.requests if r.path == "/v1/messages"}
    events = [json.loads(line) for line in out.splitlines()]
    assert code == 0, err
    comps = [e for e in events if e["type"] == "compaction" and e["layer"] == "server_compact"]
    assert comps and set(comps[0]) == LOCAL_FIELDS
    assert comps[0]["tokens_after"] < comps[0]["tokens_before"] and comps[0]["usage"]["input_tokens"] > 0
    assert any(e["type"] == "compaction_started" and e["purpose"] == "server" for e in events)
    assert events[-1]["type"] == "result" and events[-1]["stop_reason"] == "end_turn"
    assert betas == {"context-management-2025-06-27,compact-2026-01-12"}
