"""Drive `ctxtui acp` as an editor would: spawned as a subprocess, spoken to through the ACP SDK's
client side. The state folder is the test's own (conftest's CTXTUI_HOME); the model is the
loopback fake API (tests/fake_anthropic) or the offline demo, never the network."""
from __future__ import annotations

import asyncio
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

from agent_core.sessions.paths import project_state_dir, session_log_path, state_root
from tests.agent_helpers import MODEL, SECRET, user_dirs

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 30.0


def fake_env(fake: Any, **extra: str) -> dict[str, str]:
    """A fake key and the fake server's URL (the key never leaves the loopback)."""
    return {**user_dirs(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": fake.base_url, "CTXTUI_MODEL": MODEL,
            **extra}


class Editor:
    """The client side: keeps every session update; answers each permission request with the next
    of `answers` (allow | always | deny | "wait": until the test sets `release`, then cancelled)."""

    def __init__(self, answers: list[str] | None = None) -> None:
        self.updates: list[Any] = []
        self.asked: list[Any] = []
        self.answers = list(answers or [])
        self.release = asyncio.Event()
        self.got_update = asyncio.Event()
        self.got_permission = asyncio.Event()

    async def request_permission(self, options: list, session_id: str, tool_call: Any, **kwargs: Any):
        self.asked.append(tool_call)
        self.got_permission.set()
        answer = self.answers.pop(0) if self.answers else "deny"
        if answer == "wait":
            await self.release.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        assert answer in {o.option_id for o in options}
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self.got_update.set()

    async def wait_for(self, kind: str) -> list[Any]:
        """The updates of `kind`, once there is one (updates sent after a response come after it)."""
        while not self.of(kind):
            self.got_update.clear()
            await asyncio.wait_for(self.got_update.wait(), TIMEOUT)
        return self.of(kind)

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(kind))

    def clear(self) -> None:
        self.updates.clear()
        self.got_update.clear()


@asynccontextmanager
async def acp_agent(editor: Editor, env: dict[str, str], *args: str) -> AsyncIterator[tuple[Any, Any]]:
    """(connection, process) of a `ctxtui acp ARGS` already initialized; its stderr is the test's."""
    full = {**user_dirs(), **env}
    async with spawn_agent_process(editor, sys.executable, "-m", "app.cli", "acp", *args, env=full, cwd=ROOT,
                                   transport_kwargs={"stderr": None}) as (conn, proc):
        await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), TIMEOUT)
        yield conn, proc


def log_of(workspace: Path, session_id: str) -> Path:
    """Where ctxtui keeps that session's log (the state folder of conftest's CTXTUI_HOME)."""
    return session_log_path(project_state_dir(state_root(), workspace.resolve()), session_id)


def spawn_env() -> dict[str, str]:
    """The environment of a raw subprocess: no key or ctxtui setting of the user's."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXTUI_"))}, **user_dirs()}
