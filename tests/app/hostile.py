"""Hostile text for the screen tests (issue 21): what a repository, a log or a model can put in
front of ctxtui's Textual screens, and a way to read what would reach the terminal.

`terminal_text` composes the whole screen (every layer, the modal on top) into the strips the
driver would write, and joins their text: an escape sequence that survived the sanitizer shows up
there as a raw ESC, a markup tag Textual interpreted shows up as missing text."""
from __future__ import annotations

import re

# The permission-spoofing command of issue 21: the real command, 200 blanks, then a carriage return
# and escapes that erase the line and move up, so only `ls -la` would be left on screen.
SPOOF = "echo PWNED > pwned.txt #" + " " * 200 + "\r\x1b[2K\x1b[1Als -la"
ERASE = "rm -rf build\x1b[2K\x1b[1Gls"          # erases what came before on its line
TITLE = "\x1b]0;TITLE\x07"                       # sets the terminal window's title
CLEAR = "\x1b[2J"                                # clears the screen
MARKUP = "[red]x[/red]"                          # Rich / Textual markup
CLICK = "[@click=app.quit]q[/]"                  # a link that would quit the app when clicked
BAD_MARKUP = "[/b] unbalanced [bold"             # markup that raises if parsed

# Raw C0 controls (but newline and tab), DEL, and C1 controls.
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def raw_controls(text: str) -> list[str]:
    """The raw control characters in `text` (newline and tab allowed)."""
    return _RAW.findall(text)


def terminal_text(app) -> str:
    """The text of every cell of the composed screen, line by line, as it would be written."""
    update = app.screen._compositor.render_full_update()
    return "\n".join("".join(seg.text for seg in strip) for strip in update.strips)


_FRAME = " █│┃▌▐▏▕"


def flat(text: str) -> str:
    """Lines joined without their padding and the dialog's frame: a long string wrapped over lines
    can be searched whole."""
    return "".join(line.strip(_FRAME) for line in text.splitlines())


def assert_clean(text: str) -> None:
    found = raw_controls(text)
    assert not found, f"raw control characters reach the terminal: {sorted(set(found))!r}"
