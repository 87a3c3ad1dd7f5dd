"""Shared by the sandbox tests: a sandbox that must really run (in CI bubblewrap is installed by
.ci/run, so a missing one fails there instead of skipping), folders outside /tmp (inside the
sandbox /tmp is private, so a test folder under /tmp would be invisible for the wrong reason),
and one bash call through the real tool."""
from __future__ import annotations

import os
import contextlib
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from agent_core.os_sandbox import probe
from agent_core.os_sandbox.sandbox import OsSandbox
from agent_core.os_sandbox.settings import SandboxSettings
from agent_core.tools import ToolContext, ToolRegistry


ROOT = Path(__file__).resolve().parents[3]
# Inside the sandbox /tmp is private: a checkout (and its .venv) under /tmp, as a CI run may have,
# is not there. Commands that need only the standard library run the venv's base interpreter;
# the sandboxed MCP server, which needs the venv, gets the checkout bound in (CHECKOUT).
STDLIB_PYTHON = os.path.realpath(sys.executable)
CHECKOUT: tuple[Path, ...] = (ROOT,) if str(ROOT).startswith("/tmp/") else ()


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


@contextlib.contextmanager
def disk_folder(prefix: str = "ctxtui-sbx-test-") -> Iterator[Path]:
    """A fresh folder under /var/tmp (on disk, outside the sandbox's private /tmp), removed after."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def plant(base: Path, key: str = "planted-key-material") -> tuple[Path, Path, Path]:
    """(workspace, home, other) under `base`: home/.ssh/id_rsa holds `key`, other/ is a folder
    outside the workspace."""
    ws, home, other = base / "ws", base / "home", base / "other"
    for d in (ws, home / ".ssh", other):
        d.mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN KEY----- {key}\n")
    return ws, home, other


@contextlib.contextmanager
def planted_home(monkeypatch, prefix: str) -> Iterator[tuple[Path, Path]]:
    """(workspace, HOME) on disk, HOME set to the one with the planted ~/.ssh/id_rsa."""
    with disk_folder(prefix) as base:
        ws, home, _ = plant(base)
        ws.mkdir(exist_ok=True)
        monkeypatch.setenv("HOME", str(home))
        yield ws, home
