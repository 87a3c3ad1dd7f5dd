"""The one sanitizer for text that comes from outside ctxtui on its way to a terminal.

Model output, tool input and output, file and folder names and every field of a log are someone
else's bytes. Printed as they are, an escape sequence in them can erase a line, move the cursor,
set the window title or hide what a permission prompt asks (`\\r\\x1b[2K` after the real command).
`visible()` shows every such character instead of letting the terminal act on it:

- ESC becomes `␛` (so `\\x1b[2K` reads `␛[2K`), the other C0 controls and DEL their Unicode
  control pictures (`␍`, `␇`, `␀`, `␡` ...); newline and tab stay unless `multiline=False`;
- C1 controls (U+0080–U+009F, which some terminals obey like ESC sequences) are written `\\x9b`;
- bidirectional overrides and isolates (the "Trojan source" characters) are written `⟨U+202E⟩`;
- a lone surrogate (undecodable bytes kept by `surrogateescape`) becomes U+FFFD.

It returns its argument unchanged (the same object) when there is nothing to show, so the common
case costs one regex scan. Markup is a separate matter: the Textual side renders this text as
`Content`/`Text` (never parsed as markup) or escapes it first; plain stdout has no markup.
"""
from __future__ import annotations

import re

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))

_TABLE: dict[int, str] = {c: chr(0x2400 + c) for c in range(0x20)}    # ␀ … ␟
_TABLE[0x1B] = "␛"
_TABLE[0x7F] = "␡"
_TABLE.update({c: f"\\x{c:02x}" for c in range(0x80, 0xA0)})
_TABLE.update({c: f"⟨U+{c:04X}⟩" for c in _BIDI})
_TABLE.update({c: "\ufffd" for c in range(0xD800, 0xE000)})

_MULTILINE = dict(_TABLE)
del _MULTILINE[0x0A], _MULTILINE[0x09]

_BIDI_CHARS = "".join(chr(c) for c in _BIDI)
_compiled: tuple[re.Pattern, re.Pattern, re.Pattern, re.Pattern] | None = None


def _patterns() -> tuple[re.Pattern, re.Pattern, re.Pattern, re.Pattern]:
    """(any, any but newline and tab, a run of blanks, what JSON leaves raw), compiled on first need:
    3 ms that a status line or a report of plain text never pays."""
    global _compiled
    if _compiled is None:
        _compiled = (re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI_CHARS}\ud800-\udfff]"),
                     re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_CHARS}\ud800-\udfff]"),   # all but \t, \n
                     re.compile(r"[ \u00a0\u2000-\u200b\u3000]{16,}"),
                     re.compile(f"[\x7f-\x9f{_BIDI_CHARS}]"))
    return _compiled


def visible(text: str, *, multiline: bool = True) -> str:
    """`text` with every control character, escape sequence introducer, C1 control and bidi
    override shown as a visible stand-in. With `multiline=False` newline and tab are shown too
    (for table cells, titles and file names, which must stay on one line)."""
    if not isinstance(text, str):
        text = str(text)
    if text.isprintable():          # no control, format or surrogate character at all (nor \t, \n)
        return text
    any_char, any_but_lines = _patterns()[:2]
    if multiline:
        if any_but_lines.search(text) is None:
            return text
        return text.translate(_MULTILINE)
    if any_char.search(text) is None:
        return text
    return text.translate(_TABLE)


def one_line(text: str) -> str:
    """`visible(text, multiline=False)`: for names, titles and cells."""
    return visible(text, multiline=False)


def json_escaped(json_text: str) -> str:
    """JSON text from `json.dumps(..., ensure_ascii=False)` with DEL, the C1 controls and the bidi
    overrides written as `\\uXXXX` escapes, as `ensure_ascii=True` would write them (json already
    escapes the C0 controls): the same JSON value, nothing left for a terminal to obey, and every
    other character still readable. Such characters can only be inside JSON strings, where the
    escape means the same character. Returns its argument when there is nothing to escape."""
    if not json_text or max(json_text) < "\x7f":     # plain ASCII: nothing to escape
        return json_text
    raw = _patterns()[3]
    if raw.search(json_text) is None:
        return json_text
    return raw.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


def hidden_characters(text: str) -> list[str]:
    """What a terminal would act on or hide in `text`, in words, for a warning line: control
    characters (with how many), bidi overrides, and long runs of blank space that can push the
    rest of a line out of sight. [] when there is nothing to warn about."""
    found: list[str] = []
    # A CR that ends a line (Windows line endings) moves nothing a person reads: not worth a warning.
    _, any_but_lines, space_run, _ = _patterns()
    controls = [ch for ch in any_but_lines.findall(text.replace("\r\n", "\n")) if ord(ch) not in _BIDI]
    if controls:
        kinds = sorted({_TABLE[ord(ch)] for ch in controls})
        found.append(f"{len(controls)} control character{'s' if len(controls) != 1 else ''} "
                     f"({' '.join(kinds[:8])}{' …' if len(kinds) > 8 else ''})")
    bidi = [ch for ch in text if ord(ch) in _BIDI]
    if bidi:
        found.append(f"{len(bidi)} bidirectional override{'s' if len(bidi) != 1 else ''} (text may read in "
                     f"another order than it runs)")
    runs = space_run.findall(text)
    if runs:
        longest = max(len(r) for r in runs)
        found.append(f"a run of {longest} blank characters (what follows may be off screen)")
    return found
