"""Colour for the usage tables in a terminal: the header and the totals row in bold, the notes
under the table dim. Only when the output is a terminal, `NO_COLOR` (no-color.org) is unset and
TERM is not `dumb`, unless `--color` / `--no-color` says otherwise; JSON is never coloured. The
codes wrap whole lines already passed through `one_line`, so no outside text can add its own."""
from __future__ import annotations

TYPE_CHECKING = False    # typing stays unloaded at run time
if TYPE_CHECKING:
    from typing import Mapping, TextIO

BOLD, DIM, RESET = "\x1b[1m", "\x1b[2m", "\x1b[0m"


def wanted(out: TextIO, env: Mapping[str, str], choice: bool | None = None) -> bool:
    """`choice`: True (--color), False (--no-color), None (decide from the terminal and env)."""
    if choice is not None:
        return choice
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str) -> str:
    """A report's text (a table, a blank line, its notes) with the table's header and totals row
    bold and the notes dim."""
    table, sep, notes = text.partition("\n\n")
    lines = table.split("\n")
    for i, line in enumerate(lines):
        if line and (i == 0 or line.startswith("Total")):
            lines[i] = f"{BOLD}{line}{RESET}"
    painted = "\n".join(lines)
    if sep:
        painted += sep + "\n".join(f"{DIM}{n}{RESET}" if n else n for n in notes.split("\n"))
    return painted
