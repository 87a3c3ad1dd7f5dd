"""Shared by the sandbox tests: a sandbox that must really run (in CI bubblewrap is installed by
.ci/run, so a missing one fails there instead of skipping), folders outside /tmp (inside the
sandbox /tmp is private, so a test folder under /tmp would be invisible for the wrong reason),
and one bash call through the real tool."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_core.os_sandbox import probe
from agent_core.os_sandbox.sandbox import OsSandbox
from agent_core.os_sandbox.settings import SandboxSettings
from agent_core.tools import ToolContext, ToolRegistry


def require_bwrap() -> None:
    found = probe.check()
    if not found.ok:
        if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
            pytest.fail(f"CI must run the sandbox tests: {found.notice()}")
        pytest.skip(found.notice())


def sandbox(workspace: Path, home: Path, **settings) -> OsSandbox:
    settings.setdefault("mode", "auto-allow")
    return OsSandbox(SandboxSettings(**settings), workspace, home=home)


async def bash(ctx: ToolContext, command: str, timeout: float | None = None):
    args = {"command": command, **({"timeout": timeout} if timeout else {})}
    return await ToolRegistry().execute("bash", args, ctx)
