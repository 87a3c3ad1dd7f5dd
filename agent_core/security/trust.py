"""Which workspaces the user trusts to configure ctxtui from their own `.env`.

A repository is someone else's text until the user says otherwise. Its `.env` may tune ctxtui
(model, window, thresholds) but may not choose where the API key goes, supply a key, widen tool
permissions or move ctxtui's state (`SENSITIVE`), unless the user trusted the folder: by answering
the TUI's trust prompt, or with `--trust`. The answer is remembered in the user's config folder
(`trusted.json`, 0600), which no tool can reach; the user config file may also list folders by hand
(`trusted_workspaces = ["~/src/mine"]`).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Mapping

from agent_core.regular_file import open_regular
from compaction.transcript import atomic_write_text

# Settings a workspace `.env` may set only when the workspace is trusted (Config field names).
SENSITIVE = frozenset({"api_key", "base_url", "allow", "home", "mcp_config",    # mcp_config starts programs
                       "otel_endpoint", "otel_headers",    # a repository's collector would receive the usage
                       "sandbox", "sandbox_network", "sandbox_hide", "sandbox_write"})   # what a command may reach
TRUST_FILE = "trusted.json"
MAX_TRUST_FILE = 1 << 20


def user_config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/ctxtui`, else `~/.config/ctxtui` (the folder of the user config file)."""
    env = os.environ if environ is None else environ
    if (xdg := (env.get("XDG_CONFIG_HOME") or "").strip()):
        return Path(xdg).expanduser() / "ctxtui"
    home = (env.get("HOME") or "").strip()
    return (Path(home) if home else Path.home()) / ".config" / "ctxtui"


def trust_file(environ: Mapping[str, str] | None = None) -> Path:
    return user_config_dir(environ) / TRUST_FILE


def _norm(path: str | Path) -> str:
    return str(Path(path).expanduser().resolve())


def _read(path: Path) -> list[str]:
    """The trusted folders in `path`; [] when it is missing, unreadable, not a regular file of
    ours, or not the JSON we write (a damaged file trusts nothing)."""
    try:
        with open_regular(path, follow_symlinks=False) as f:
            if hasattr(os, "geteuid") and os.fstat(f.fileno()).st_uid != os.geteuid():
                return []
            data = f.read(MAX_TRUST_FILE)
    except OSError:
        return []
    try:
        folders = json.loads(data).get("trusted", [])
    except (ValueError, AttributeError):
        return []
    return [f for f in folders if isinstance(f, str)] if isinstance(folders, list) else []


def is_trusted(workspace: Path, environ: Mapping[str, str] | None = None,
               listed: Iterable[str] = ()) -> bool:
    """True when the user trusted `workspace` (remembered, or listed in the user config file)."""
    ws = _norm(workspace)
    return ws in {_norm(f) for f in [*_read(trust_file(environ)), *listed] if f.strip()}


def remember(workspace: Path, environ: Mapping[str, str] | None = None) -> Path:
    """Trust `workspace` from now on; returns the file that remembers it. Raises OSError."""
    path = trust_file(environ)
    folders = _read(path)
    ws = _norm(workspace)
    if ws not in folders:
        folders.append(ws)
    return atomic_write_text(path, json.dumps({"trusted": sorted(folders)}, indent=1) + "\n")


def how_to_trust(workspace: Path, environ: Mapping[str, str] | None = None) -> str:
    return (f"If you wrote that .env yourself, trust the folder: answer 'trust' in the TUI's prompt, or run once "
            f"with --trust (remembered in {trust_file(environ)}).")
