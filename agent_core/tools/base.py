"""What every tool shares: its output, the context it runs in, the error a tool raises on purpose,
and the small input checker that turns a bad call into a message the model can act on."""
from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, TypeVar

from agent_core.security.credentials import SECRET_ENV_VARS as SECRET_ENV_VARS  # re-exported by agent_core.tools
from agent_core.security.credentials import tool_environment  # no command the model runs sees a credential
from agent_core.tools.file_history import FileHistory

if TYPE_CHECKING:
    from agent_core.os_sandbox.sandbox import OsSandbox


T = TypeVar("T")

SKIP_DIRS = frozenset({".git", ".venv", ".ctxtui", "__pycache__", "node_modules"})


@dataclass
class ToolOutput:
    """A tool's answer: the text the model sees, whether it is an error, and facts for the loop."""
    content: str
    is_error: bool = False
    meta: dict[str, Any] = field(default_factory=dict)


class ToolError(Exception):
    """Raised by a tool for a failure the model can fix (bad input, missing file, refused path).
    The registry turns it into an `is_error` result carrying exactly this message."""


@dataclass
class ToolContext:
    """Everything a tool may touch. One per session; tools never keep state of their own."""
    workspace: Path
    bash_timeout: float = 120.0          # seconds, when the call gives none
    bash_max_timeout: float = 600.0      # a call may ask for more, up to this
    output_cap: int = 30_000             # chars of bash output kept (head + tail)
    read_max_lines: int = 2_000
    read_max_line_chars: int = 2_000
    read_max_chars: int = 50_000         # read_file bounds itself (the result budget exempts it); the factory
                                         # gives it the window's share (tool_result_budget.per_result_chars)
    list_cap: int = 500                  # glob paths / grep matches shown
    skip_dirs: frozenset[str] = SKIP_DIRS
    env: dict[str, str] | None = None    # bash environment; None = ours minus SECRET_ENV_VARS
    spill_dir: Path | None = None        # where bash keeps the full output of a capped command (0600)
    transcript_dir: Path | None = None   # the session's compaction transcripts, which a summary points to
    protected: tuple[Path, ...] = ()     # ctxtui's own state folders: no tool may reach them
    tool_timeout: float = 120.0          # deadline of every call but bash's (bash has bash_timeout)
    # The loop's context figures for `context_status` (Agent.context_status); None outside a loop
    status: Callable[[], dict[str, Any]] | None = field(default=None, repr=False, compare=False)
    # Each file as it was before write_file or edit_file changed it (file_history.py); None: not kept
    history: FileHistory | None = field(default=None, repr=False, compare=False)
    # The OS sandbox bash and shell mode run in (agent_core/os_sandbox); None: unconfined
    os_sandbox: OsSandbox | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.workspace = Path(os.path.realpath(Path(self.workspace).expanduser()))
        self.protected = tuple(Path(os.path.realpath(Path(p).expanduser())) for p in self.protected)
        if not self.workspace.is_dir():
            raise ValueError(f"workspace {self.workspace} is not a folder")

    def bash_env(self) -> dict[str, str]:
        """The environment of every command the model runs (bash, shell mode): `env`, else ours,
        without a credential variable whichever it came from (credentials.tool_environment)."""
        if self.env is not None:
            return tool_environment(self.env)
        env = tool_environment(os.environ)
        env.setdefault("PAGER", "cat")
        env.setdefault("GIT_PAGER", "cat")
        return env

    def rel(self, path: Path) -> str:
        """The path as the model should write it: relative to the workspace, '/' separated."""
        try:
            r = path.relative_to(self.workspace).as_posix()
        except ValueError:
            return str(path)
        return r or "."


async def run_in_thread(fn: Callable[[threading.Event], T]) -> T:
    """Run blocking work off the event loop. `fn` receives an Event set when the calling task is
    cancelled, so long walks (grep, glob) stop promptly instead of running on unseen."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(fn, stop)
    except asyncio.CancelledError:
        stop.set()
        raise


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "object": (dict,), "array": (list,),
}


def check_input(schema: dict, data: Any, tool: str) -> list[str]:
    """Problems with `data` against a flat JSON schema (required, types, unknown keys, minimum).
    Small on purpose: our schemas are flat, and we want messages written for the model."""
    if not isinstance(data, dict):
        return [f"input must be a JSON object, got {type(data).__name__}"]
    props: dict = schema.get("properties", {})
    problems = [f"missing required field '{k}'" for k in schema.get("required", []) if k not in data]
    for key, value in data.items():
        spec = props.get(key)
        if spec is None:
            if schema.get("additionalProperties", True) is False:
                problems.append(f"unknown field '{key}' (fields of {tool}: {', '.join(props) or 'none'})")
            continue
        want = spec.get("type")
        ok = _TYPES.get(want, (object,))
        bad_bool = isinstance(value, bool) and want in ("integer", "number")
        if not isinstance(value, ok) or bad_bool:
            problems.append(f"field '{key}' must be {want}, got {type(value).__name__}")
            continue
        if "minimum" in spec and value < spec["minimum"]:
            problems.append(f"field '{key}' must be at least {spec['minimum']}, got {value}")
    return problems


class Tool:
    """A tool. Subclasses set the first three attributes (a built-in tool as class attributes, an
    MCP tool per instance) and implement `run`."""
    name: str
    description: str                     # written for the model
    input_schema: dict
    read_only: ClassVar[bool] = False
    own_deadline: ClassVar[bool] = False   # True: the tool enforces its own timeout (bash)
    checks_input: ClassVar[bool] = True    # False: the tool's owner validates input (an MCP server)

    def definition(self) -> dict:
        """The Messages-API tool definition."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    async def run(self, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002 (API name)
        raise NotImplementedError
