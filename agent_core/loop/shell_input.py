"""Shell mode: a prompt that starts with `!` is a command the user runs themselves, in the
workspace, with no permission asked (they typed it). It runs through the bash tool's runner (its
timeout, output cap, spill file, an environment without ctxtui's secrets, the process group killed
on cancel), and the command with its output becomes the user's own message, as Claude Code does,
so the next model turn sees it; no model is called for it.

The message is one text block in tags (`<bash-input>`, `<bash-output>`): it starts with `<`, so
it never reads as a typed prompt (the demo model and the summary's "your prompts" skip it), and
the entry's `meta["shell"]` tells the conversation to draw it as a command, on resume too."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compaction.entry import Entry

from agent_core.tools.base import ToolContext
from agent_core.tools.bash import BashTool
from agent_core.tools.registry import ToolRegistry

PREFIX = "!"
META = "shell"     # the entry's meta key: {"command", "exit_code", "is_error"}


def is_shell(text: str) -> bool:
    """A prompt in shell mode: its first non-blank character is `!`."""
    return text.lstrip().startswith(PREFIX)


def shell_command(text: str) -> str:
    """The command of a `!command` prompt, without the `!` and the blanks around it."""
    body = text.strip()
    return body[len(PREFIX):].strip() if body.startswith(PREFIX) else body


@dataclass(frozen=True)
class ShellRun:
    """One command the user ran: what the bash runner answered (output, notes, `exit code N`)."""
    command: str
    output: str
    exit_code: int | None
    is_error: bool

    def message_text(self) -> str:
        """The user message the context gets: the command and what it printed (stdout and stderr
        interleaved, as the bash tool gives them), in tags the model can tell from a prompt."""
        return (f"<bash-input>{self.command}</bash-input>\n"
                f"<bash-output>\n{self.output}\n</bash-output>")

    def entry(self) -> Entry:
        meta = {META: {"command": self.command, "exit_code": self.exit_code, "is_error": self.is_error}}
        return Entry({"role": "user", "content": [{"type": "text", "text": self.message_text()}]}, meta=meta)


async def run_shell(command: str, ctx: ToolContext) -> ShellRun:
    """Run `command` with the bash tool's runner (through a registry, so its output is scrubbed of
    secrets and a failure to start is an answer, not an exception). Cancelling the awaiting task
    kills the command's process group and raises CancelledError."""
    out = await ToolRegistry([BashTool()]).execute("bash", {"command": command}, ctx)
    code = out.meta.get("exit_code")
    return ShellRun(command, out.content, code if isinstance(code, int) else None, out.is_error)


def shell_of(entry: Entry) -> tuple[str, str, bool] | None:
    """(command, output, is_error) of a shell-mode entry, None for any other entry: what the
    conversation draws for it when a session is resumed."""
    info: Any = entry.meta.get(META)
    if not isinstance(info, dict) or entry.role != "user":
        return None
    text = entry.text()
    _, _, rest = text.partition("<bash-output>\n")
    output = rest.removesuffix("\n</bash-output>") if rest else text
    return str(info.get("command", "")), output, bool(info.get("is_error"))
