"""One ACP session: a ctxtui Agent built by the factory exactly as headless builds one, for the
session's cwd as the workspace; its id is the ctxtui session id, so `ctxtui --resume ID` and
`ctxtui watch` find it.

The config is loaded as everywhere (flags > environment > the workspace's `.env` > the user file),
with the same trust rules: an untrusted workspace's `.env` cannot set the key, endpoint, allowed
tools or state folder. The agent is interactive: a tool set to ask is asked of the client.
"""
from __future__ import annotations

import argparse
import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_core.config import load_config
from agent_core.loop.factory import build_agent

from app.acp.mcp_servers import server_table
from app.acp.updates import Translator
from app.acp.usage import UsageReporter


class Session:
    def __init__(self, agent: Any, workspace: Path, notices: list[str]) -> None:
        self.agent = agent
        self.workspace = str(workspace)
        self.id: str = agent.session_id
        self.notices = notices           # said once, before the first turn's events
        self.prompting: asyncio.Task | None = None
        self.cancelled = False           # session/cancel came during this prompt
        self.translator = Translator(self.workspace, UsageReporter(
            lambda: agent.cost.total_usd, lambda usage: agent.price(agent.info.model, usage)))

    @property
    def busy(self) -> bool:
        return self.prompting is not None and not self.prompting.done()

    def take_notices(self) -> list[str]:
        notices, self.notices = self.notices, []
        return notices


def open_session(options: argparse.Namespace, cwd: str, resume: str | None = None,
                 mcp_servers: list[Any] | None = None) -> Session:
    """Build the agent for `cwd` (a new session, or `resume`'s), with the editor's MCP servers
    beside the user file's. Raises ConfigError (a setting, an unknown session, a session in use)
    or SessionWriteError (the state folder cannot be written)."""
    workspace = Path(cwd)
    config = load_config(options, workspace=workspace)
    table, notices = server_table(mcp_servers)
    if table:
        config = replace(config, mcp_servers={**config.mcp_servers, **table})
    agent = build_agent(config, interactive=True, resume=resume)
    if (ignored := config.ignored_message()):
        notices.append(ignored)
    notices += [f"session log: {line}" for line in agent.load_warnings()]
    if agent.info.offline:
        notices.append("No ANTHROPIC_API_KEY: running on the offline demo model.")
    for notice in (getattr(agent, "engine_notice", None), getattr(agent, "policy_notice", None),
                   *getattr(agent, "start_notices", ())):
        if notice:
            notices.append(notice)
    return Session(agent, config.workspace, notices)
