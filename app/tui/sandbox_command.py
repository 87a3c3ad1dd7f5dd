"""`/sandbox [MODE | network NONE|ALL|HOSTS]`: what the typed argument changes, as data the app
shows; the screen covers the no-argument case. Changes last for the session (the setting, the
flag or CTXTUI_SANDBOX keep them)."""
from __future__ import annotations

from agent_core.os_sandbox.sandbox import OsSandbox
from agent_core.os_sandbox.settings import parse_mode, parse_network

USAGE = "/sandbox auto-allow | ask | off, or /sandbox network none | all | HOST[,HOST]"


def apply(sandbox: OsSandbox | None, arg: str) -> str:
    """Apply `arg`; the sentence that says what now holds. Raises ValueError with the usage."""
    if sandbox is None:
        raise ValueError("this session has no OS sandbox (it runs no tools)")
    word, _, rest = arg.strip().partition(" ")
    try:
        if word.lower() == "network":
            sandbox.set_network(parse_network(rest))
        else:
            sandbox.set_mode(parse_mode(arg))
    except ValueError:
        raise ValueError(f"not a sandbox setting: {arg!r}; type {USAGE}") from None
    return said(sandbox)


def status_words(sandbox: OsSandbox | None) -> str:
    """The status line's part ("" without a sandbox)."""
    return sandbox.status().short() if sandbox is not None else ""


def said(sandbox: OsSandbox) -> str:
    s = sandbox.status()
    if s.mode == "off":
        return "Sandbox off: bash runs unconfined, with your rights, and asks first."
    if not s.confined:
        return f"Sandbox {s.mode} chosen, but {s.problem}. Every bash command asks until then."
    asks = "without asking" if s.mode == "auto-allow" else "after asking"
    return f"Sandbox {s.mode}: bash runs inside {asks}; network: {s.network}."


def carry(old: OsSandbox | None, new: OsSandbox | None) -> None:
    """/clear, /model and /resume start a new agent from the settings: what /sandbox chose in this
    run goes with it (a sandbox turned off by hand must not come back on, nor the reverse)."""
    if old is not None and new is not None:
        new.settings = old.settings
