"""The TUI's MCP notices (attacker review): a server that did not start is described as written,
`${VAR}` kept, in its notice and in /mcp, never with the secret the variable expanded to."""
from __future__ import annotations

import json
import sys

from app.tui.launch import build_app
from app.tui.widgets.conversation.notice_message import NoticeRecord
from tests.agent_helpers import make_workspace, user_dirs
from tests.mcp_helpers import CALC
from tests.pilot_until import until

TOKEN = "tok-tui-SECRET-0123456789"


def _said(app) -> list[str]:
    conv = app.conversation
    return [" ".join(conv.text_of(n).split()) for n in conv.records_of(NoticeRecord)]


async def test_the_did_not_start_notice_and_mcp_list_show_no_expanded_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_T_TOKEN", TOKEN)
    ws = make_workspace(tmp_path)
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"broken": {
        "command": sys.executable, "args": [str(CALC), str(tmp_path / "pid"), "fail", "--token", "${MCP_T_TOKEN}"]}}}))
    app = build_app({"model": "demo", "mcp_config": [str(cfg)]}, environ=user_dirs(), workspace=ws, claude_root=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: any("MCP server broken did not start" in s for s in _said(app)), "the notice")
        app.run_slash("/mcp")
        await until(pilot, lambda: any(s.startswith("MCP servers (1)") for s in _said(app)), "the /mcp list")
        said = "\n".join(_said(app))
    assert "--token ${MCP_T_TOKEN}" in said and "/nope.db" in said
    assert TOKEN not in said
