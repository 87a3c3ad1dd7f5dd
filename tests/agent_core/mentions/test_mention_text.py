"""Finding `@path` in a prompt, and writing a path so the parser reads it back."""
from __future__ import annotations

import pytest

from agent_core.mentions.mention_text import find_mentions, mention_at, quote


def test_mentions_start_after_a_blank_and_drop_sentence_punctuation():
    text = "look at @src/a.py, then (@b.md). Mail me@example.com about @c.txt."
    assert find_mentions(text) == ["src/a.py", "b.md", "c.txt"]


def test_a_lone_at_or_a_double_at_is_not_a_mention():
    assert find_mentions("@ nothing @@twice") == []


def test_repeats_are_kept_for_the_caller_to_attach_once():
    assert find_mentions("@a.py and @a.py") == ["a.py", "a.py"]


@pytest.mark.parametrize("path", ["plain.py", "my file.txt", 'quo"te.txt', "back\\slash", "new\nline",
                                  "esc\x1b[2K.txt", "tab\there", "ends.", "ünï/cødé.md"])
def test_quote_reads_back_as_the_same_path(path):
    token = quote(path)
    assert "\n" not in token and "\x1b" not in token
    assert find_mentions(f"see {token} please") == [path]


def test_plain_paths_are_written_bare():
    assert quote("src/app.py") == "@src/app.py"
    assert quote("my file.txt") == '@"my file.txt"'


def test_an_unclosed_quote_is_no_mention():
    assert find_mentions('@"never closed') == []


def test_the_mention_being_typed():
    assert mention_at("read @src/ma", 12) == (5, "src/ma")
    assert mention_at("@", 1) == (0, "")
    assert mention_at("mail me@exa", 11) is None
    assert mention_at("read @a.py then", 15) is None       # the cursor has left it
    assert mention_at('read @"quoted', 13) is None
