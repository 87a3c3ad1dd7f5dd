"""Slash commands: one table shared by the prompt (parsing, Tab completion) and the command palette,
so the two can never disagree about what exists."""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Protocol

from textual.command import DiscoveryHit, Hit, Hits, Provider

from agent_core.loop.shell_input import is_shell


class CommandHost(Protocol):
    """What the palette needs from the app (app.tui.app.CtxApp)."""

    def fill_prompt(self, text: str) -> None: ...

    def run_slash(self, text: str) -> None: ...


@dataclass(frozen=True)
class SlashCommand:
    name: str
    args: str          # usage text for the argument, "" when none
    help: str
    needs_arg: bool = False


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("compact", "[--preview] [focus]", "Compact now (optional focus for the summary); --preview: "
                 "what it would do and cost, first"),
    SlashCommand("context", "", "Show the full context breakdown"),
    SlashCommand("mcp", "", "The MCP servers: state, tools and what their definitions take"),
    SlashCommand("sandbox", "[MODE | network HOSTS]", "The OS sandbox bash runs in: its state and boundary; "
                 "choose auto-allow, ask or off, or what network it may reach"),
    SlashCommand("cost", "", "Show cost by model and token bucket (toggle full size)"),
    SlashCommand("clear", "", "Start a new session with an empty context"),
    SlashCommand("model", "[NAME]", "Switch the model, in a new session (no NAME: pick one, with its prices "
                 "and what the switch costs)"),
    SlashCommand("threshold", "[70% | N]", "Move the auto-compact threshold, kept for this model "
                 "(Alt+Up / Alt+Down: 1% at a time)"),
    SlashCommand("rewind", "", "Go back to an earlier prompt: the conversation as it was before it, the prompt "
                 "back in the input; files the agent changed since are restored if you say so, after a diff"),
    SlashCommand("diff", "", "The session's changes to files (the agent's write and edit calls), as a diff"),
    SlashCommand("resume", "[ID]", "Resume a saved session"),
    SlashCommand("transcripts", "", "Browse sessions, compaction transcripts and Claude Code logs"),
    SlashCommand("wait", "[DURATION]", "Demo model: let time pass (default: the cache TTL + 1m) so the prompt cache "
                 "goes cold, as after a real pause"),
    SlashCommand("help", "", "Keys and commands"),
)
BY_NAME = {c.name: c for c in COMMANDS}


# Under a prompt that starts with `!` (agent_core/loop/shell_input.py).
SHELL_HINT = "! shell mode: runs in the workspace, output joins the context"


class CommandError(ValueError):
    """A slash command the user typed that cannot run; the message says what to type instead."""


@dataclass(frozen=True)
class Parsed:
    name: str
    arg: str = ""


def is_command(text: str) -> bool:
    return text.lstrip().startswith("/")


def parse(text: str) -> Parsed:
    """Parse `/name [arg]`. Raises CommandError naming the known commands when it is not one."""
    body = text.strip()
    if not body.startswith("/"):
        raise CommandError("not a slash command")
    name, _, arg = body[1:].partition(" ")
    name = name.lower()
    cmd = BY_NAME.get(name)
    if cmd is None:
        known = ", ".join("/" + c.name for c in COMMANDS)
        raise CommandError(f"unknown command /{name}; try one of {known}")
    arg = arg.strip()
    if cmd.needs_arg and not arg:
        raise CommandError(f"/{cmd.name} needs an argument: /{cmd.name} {cmd.args}")
    return Parsed(cmd.name, arg)


def complete(text: str) -> list[str]:
    """Completions for a partly typed `/na`: the full `/name` of every command that starts with it
    (with a trailing space when the command takes an argument). Empty when `text` is not a command
    prefix or already has an argument."""
    if not text.startswith("/") or " " in text or "\n" in text:
        return []
    prefix = text[1:].lower()
    return ["/" + c.name + (" " if c.args else "") for c in COMMANDS if c.name.startswith(prefix)]


def hint(text: str) -> str:
    """One line shown under the prompt while typing a command: matches with their usage; for a
    `!command`, that it runs in shell mode."""
    if is_shell(text):
        return SHELL_HINT
    names = complete(text)
    if not names:
        return ""
    parts = []
    for n in names:
        c = BY_NAME[n.strip()[1:]]
        parts.append(f"/{c.name}{' ' + c.args if c.args else ''}")
    return "  ".join(parts) + ("   (Tab completes)" if len(names) >= 1 else "")


class SlashCommandProvider(Provider):
    """The same commands in the command palette (Ctrl+P). Commands that need an argument put
    `/name ` into the prompt instead of running."""

    async def discover(self) -> Hits:
        for c in COMMANDS:
            yield DiscoveryHit(f"/{c.name} {c.args}".rstrip(), partial(self._run, c), help=c.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query.lstrip("/"))
        for c in COMMANDS:
            label = f"/{c.name} {c.args}".rstrip()
            score = max(matcher.match(c.name), matcher.match(c.help) * 0.5)
            if score > 0:
                yield Hit(score, matcher.highlight(label), partial(self._run, c), text=label, help=c.help)

    def _run(self, c: SlashCommand) -> None:
        app: CommandHost = self.app  # type: ignore[assignment]
        if c.needs_arg:
            app.fill_prompt(f"/{c.name} ")
        else:
            app.run_slash(f"/{c.name}")
