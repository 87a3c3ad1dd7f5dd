"""The one sanitizer (issue 21): nothing a terminal would act on survives, everything else is
left alone, and the common case returns the very same string."""
from __future__ import annotations

from hypothesis import given, strategies as st

from agent_core.security.visible_text import hidden_characters, one_line, visible

SPOOF = "echo PWNED > pwned.txt #" + " " * 200 + "\r\x1b[2K\x1b[1Als -la"


def _acts_on_terminal(s: str) -> bool:
    return any(ord(c) < 0x20 and c not in "\n\t" or 0x7F <= ord(c) < 0xA0 for c in s)


def test_escape_sequences_are_shown_not_obeyed():
    shown = visible(SPOOF)
    assert "\x1b" not in shown and "\r" not in shown
    assert shown.endswith("␍␛[2K␛[1Als -la") and shown.startswith("echo PWNED > pwned.txt #")


def test_title_setting_and_bell_in_a_file_name():
    assert one_line("evil\x1b]0;X\x07.py") == "evil␛]0;X␇.py"


def test_c1_bidi_and_surrogates():
    assert visible("a\x9b2Jb") == "a\\x9b2Jb"
    assert visible("x\u202ey") == "x⟨U+202E⟩y"
    assert visible("bad\udc80") == "bad\ufffd"


def test_newlines_and_tabs_kept_unless_one_line():
    assert visible("a\nb\tc") == "a\nb\tc"
    assert one_line("a\nb\tc") == "a␊b␉c"


def test_plain_text_is_returned_as_is():
    s = "plain text — with ünïcode and [bold]markup[/bold]"
    assert visible(s) is s and one_line(s) is s


def test_warning_names_controls_and_blank_runs():
    warn = hidden_characters(SPOOF)
    assert any("control characters" in w and "␛" in w and "␍" in w for w in warn)
    assert any("200 blank" in w for w in warn)
    assert hidden_characters("ls -la") == [] and hidden_characters("line one\r\nline two\r\n") == []
    assert any("bidirectional" in w for w in hidden_characters("a\u202eb"))


@given(st.text())
def test_no_terminal_control_survives(s):
    assert not _acts_on_terminal(visible(s))
    out = one_line(s)
    assert not _acts_on_terminal(out) and "\n" not in out and "\t" not in out


_RISKY = st.sampled_from(["\x00", "\x1b", "\t", "\n", "\r", "\x7f", "\x85", "\x9b", "\u061c", "\u200e", "\u202e",
                          "\u2066", "\ud800", "\udfff", " ", "\u00a0", "é", "✓", "a", "{", '"'])


@given(st.lists(_RISKY | st.characters(), max_size=30).map("".join))
def test_the_quick_checks_say_what_the_patterns_say(text):
    """`visible` skips its patterns for printable text, `json_escaped` for plain ASCII: the same
    answers as the patterns themselves on text made of exactly the characters they look for."""
    from agent_core.security import visible_text as vt

    any_char, any_but_lines, _, raw = vt._patterns()
    want_one = text.translate(vt._TABLE) if any_char.search(text) else text
    want_multi = text.translate(vt._MULTILINE) if any_but_lines.search(text) else text
    assert vt.visible(text, multiline=False) == want_one
    assert vt.visible(text) == want_multi
    want_json = raw.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    assert vt.json_escaped(text) == want_json
