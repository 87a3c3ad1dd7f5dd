"""Permission policy per tool: allow / ask / deny.

The front-end answers questions through a callback: the TUI shows a modal (allow once, allow
always, deny); headless has no one to ask, so anything not allowed up front (`--allow TOOL`) is
denied. A denial is a tool result the model reads, never an exception. "always" lasts for the
session and is part of the state a resumed session restores."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Mapping

from agent_core.events import PermissionRequest
from agent_core.tool_spec import TOOL_NAMES, is_mcp_name
from agent_core.tools.base import ToolOutput
from agent_core.tools.mcp_tool import PREFIX, server_of

MODES = ("allow", "ask", "deny")
DEFAULT_POLICY: dict[str, str] = {
    "read_file": "allow", "glob": "allow", "grep": "allow", "compact": "allow", "context_status": "allow",
    "write_file": "ask", "edit_file": "ask", "bash": "ask",
}
UNKNOWN_TOOL_MODE = "ask"      # a tool nobody configured is asked about, never silently allowed

Ask = Callable[[PermissionRequest], Awaitable[str]]


@dataclass(frozen=True)
class Decision:
    """The outcome of a check. `source` says why: policy | always | sandbox | user | headless | error."""
    allowed: bool
    tool: str
    source: str
    answer: str | None = None          # what the user answered, when asked
    message: str = ""                  # for a denial: the text the model sees

    def output(self) -> ToolOutput:
        """The tool result for a denied call (the loop sends it instead of running the tool)."""
        return ToolOutput(self.message or f"The user denied permission to use {self.tool}.", is_error=True,
                          meta={"permission": "denied", "source": self.source})


def parse_tool_list(text: str | Iterable[str]) -> list[str]:
    """'bash,write_file' (or a list of such strings, as repeated --allow flags give) -> tool names.
    'all' or '*' means every built-in tool. Raises ValueError naming a bad name and the valid ones."""
    items = [text] if isinstance(text, str) else list(text)
    names: list[str] = []
    for item in items:
        for name in (n.strip() for n in item.split(",")):
            if not name:
                continue
            if name in ("all", "*"):
                names.extend(TOOL_NAMES)
            elif name in TOOL_NAMES or is_mcp_name(name):
                names.append(name)
            elif name.startswith(PREFIX):
                raise ValueError(f"{name!r} names no MCP server or tool; expected mcp__SERVER or mcp__SERVER__TOOL, "
                                 f"where SERVER has no '__' and does not begin or end with '_'")
            else:
                raise ValueError(f"unknown tool {name!r}; expected a comma-separated list of: "
                                 f"{', '.join(TOOL_NAMES)} (or 'all'), or mcp__SERVER / mcp__SERVER__TOOL")
    return list(dict.fromkeys(names))


def mcp_server_key(tool: str) -> str | None:
    """`mcp__SERVER` for an MCP tool's name (what allows all of a server's tools), else None. Never
    a prefix match: `mcp__files` is the key of server `files`'s tools alone (mcp_tool.server_of)."""
    server = server_of(tool)
    return f"{PREFIX}{server}" if server else None


class PermissionPolicy:
    """`defaults` (DEFAULT_POLICY when None) under `overrides` (config, CLI --allow/--deny), under
    the session's "always" answers."""

    def __init__(self, defaults: Mapping[str, str] | None = None,
                 overrides: Mapping[str, str] | None = None) -> None:
        self.defaults = dict(DEFAULT_POLICY if defaults is None else defaults)
        self.overrides = dict(overrides or {})
        for source, table in (("defaults", self.defaults), ("overrides", self.overrides)):
            for tool, mode in table.items():
                if mode not in MODES:
                    raise ValueError(f"permission for {tool!r} in {source} is {mode!r}; expected one of "
                                     f"{', '.join(MODES)}")
        self.always: set[str] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        # The OS sandbox (agent_core/os_sandbox/sandbox.OsSandbox), set by the factory: it decides
        # bash's mode when the user chose it (auto-allow; or ask for every command when it cannot run).
        self.sandbox: Any = None

    @classmethod
    def headless(cls, allow: str | Iterable[str] = (), deny: str | Iterable[str] = ()) -> "PermissionPolicy":
        """The policy for `--allow TOOL[,TOOL]` / `--deny TOOL[,TOOL]`."""
        overrides = {t: "allow" for t in parse_tool_list(allow)}
        overrides.update({t: "deny" for t in parse_tool_list(deny)})
        return cls(overrides=overrides)

    def mode(self, tool: str) -> str:
        """allow | ask | deny. An "always" answer turns ask into allow; it never lifts a deny. The
        sandbox has the last word on bash."""
        base = self.configured_mode(tool)
        mode = "allow" if base == "ask" and tool in self.always else base
        return self.sandbox.bash_mode(mode) if self._sandboxed(tool) else mode

    def _sandboxed(self, tool: str) -> bool:
        return tool == "bash" and self.sandbox is not None and self.sandbox.settings.enabled

    def _forced_to_ask(self, tool: str) -> bool:
        """The user chose the sandbox and it cannot run: bash asks every time, whatever was allowed."""
        return self._sandboxed(tool) and self.sandbox.forces_asking

    def configured_mode(self, tool: str) -> str:
        """The mode from defaults and overrides alone (what a new session would start with). An MCP
        tool (mcp__SERVER__TOOL) takes its own setting, else its server's (mcp__SERVER), else ask."""
        server = mcp_server_key(tool)
        return (self.overrides.get(tool) or (server and self.overrides.get(server)) or self.defaults.get(tool)
                or UNKNOWN_TOOL_MODE)

    async def check(self, tool_name: str, input: dict, ask: Ask | None, *,  # noqa: A002
                    request_id: str = "") -> Decision:
        mode = self.mode(tool_name)
        if mode == "allow":
            remembered = tool_name in self.always and self.configured_mode(tool_name) == "ask"
            boxed = self._sandboxed(tool_name) and self.sandbox.settings.mode == "auto-allow"
            return Decision(True, tool_name, "sandbox" if boxed else "always" if remembered else "policy")
        if mode == "deny":
            return Decision(False, tool_name, "policy", message=(
                f"The user denied permission to use {tool_name}: their permission settings deny it. "
                f"Do not retry it; continue without it or tell the user what you need."))
        if ask is None and self._forced_to_ask(tool_name):
            return Decision(False, tool_name, "headless", message=(
                f"The user denied permission to use {tool_name}: they chose to run it in the OS sandbox, which "
                f"cannot run here ({self.sandbox.availability().problem}), and this run is non-interactive. "
                f"Do not retry it; continue without it or say what you would have done."))
        if ask is None:
            return Decision(False, tool_name, "headless", message=(
                f"The user denied permission to use {tool_name}: this run is non-interactive and "
                f"{tool_name} was not allowed up front (run with --allow {tool_name} to permit it). "
                f"Do not retry it; continue without it or say what you would have done."))
        # One question per tool at a time: parallel calls wait, then see an "always" given meanwhile.
        async with self._locks.setdefault(tool_name, asyncio.Lock()):
            if tool_name in self.always and not self._forced_to_ask(tool_name):
                return Decision(True, tool_name, "always")
            note = self.sandbox.permission_note() if self._sandboxed(tool_name) else ""
            request = PermissionRequest(id=request_id, name=tool_name, input=dict(input), note=note)
            try:
                answer = str(await ask(request)).strip().lower()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 — a broken front-end must not crash the turn
                return Decision(False, tool_name, "error", message=(
                    f"The user denied permission to use {tool_name}: the permission prompt failed "
                    f"({type(e).__name__}). Do not retry it."))
            request.decision = answer
        if answer == "always":
            self.always.add(tool_name)
            return Decision(True, tool_name, "user", answer="always")
        if answer == "allow":
            return Decision(True, tool_name, "user", answer="allow")
        return Decision(False, tool_name, "user", answer=answer, message=(
            f"The user denied permission to use {tool_name} for this call. Do not retry the same call; "
            f"ask the user how to proceed or take another approach."))

    # --- session state (resume keeps the "always" answers) ---
    def to_dict(self) -> dict:
        return {"always": sorted(self.always)}

    def restore(self, state: Mapping) -> None:
        self.always = {str(t) for t in state.get("always", [])}

    @classmethod
    def from_dict(cls, state: Mapping, defaults: Mapping[str, str] | None = None,
                  overrides: Mapping[str, str] | None = None) -> "PermissionPolicy":
        policy = cls(defaults, overrides)
        policy.restore(state)
        return policy
