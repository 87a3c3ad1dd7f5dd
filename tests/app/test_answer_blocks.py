"""A streamed answer is drawn block by block (assistant_message.BlockCache): at every point of the
stream its lines are exactly the whole answer's lines, and a flush draws only the block that grew."""
from __future__ import annotations

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.style import Style

from app.tui.widgets.conversation import assistant_message
from app.tui.widgets.conversation.answer_record import AssistantRecord
from app.tui.widgets.conversation.assistant_message import BlockCache, answer_lines
from app.tui.widgets.conversation.draw import Look

LOOK = Look(Console(width=100, color_system="truecolor"), {}, True, {"text-primary": "#336699"},
            Style(bgcolor="#101010"))

WORDS = st.sampled_from(["alpha", "`code`", "**bold**", "*it*", "[a link](http://x.y)", "![img](p.png)",
                         "<tag>", "x" * 30, "1.", "-", ">", "|", "#", "==="])
LINE = st.lists(WORDS, min_size=1, max_size=6).map(" ".join)
BLOCK = st.one_of(
    LINE,                                                            # a paragraph (or what it turns into)
    st.lists(LINE, min_size=2, max_size=3).map("\n".join),           # one of several lines
    LINE.map(lambda t: "## " + t), LINE.map(lambda t: "# " + t), LINE.map(lambda t: t + "\n---"),
    st.lists(LINE, min_size=1, max_size=4).map(lambda items: "\n".join("- " + i for i in items)),
    st.lists(LINE, min_size=1, max_size=4).map(lambda items: "\n".join(f"{n}. {i}" for n, i in enumerate(items, 3))),
    st.lists(LINE, min_size=1, max_size=3).map(lambda items: "\n\n".join("- " + i for i in items)),   # loose
    LINE.map(lambda t: f"- {t}\n  - nested {t}\n    continued"),
    LINE.map(lambda t: f"> {t}\n> more"),
    LINE.map(lambda t: f"```python\ndef f():\n    return '{t}'\n```"),
    LINE.map(lambda t: f"```\n{t}"),                                  # a fence not closed yet
    LINE.map(lambda t: f"    indented {t}"),
    st.just("| a | b |\n|---|---|\n| 1 | 2 |"),
    st.just("---"), st.just("***"), st.just("<summary>"), st.just("</summary>"),
)
SEPARATORS = st.sampled_from(["\n\n", "\n", "\n\n\n"])


@st.composite
def documents(draw) -> str:
    blocks = draw(st.lists(BLOCK, min_size=1, max_size=7))
    out = blocks[0]
    for b in blocks[1:]:
        out += draw(SEPARATORS) + b
    return out


def segments(lines) -> list:
    return [list(strip) for strip in lines]


@settings(max_examples=150, deadline=None)
@given(documents(), st.lists(st.integers(1, 25), min_size=1, max_size=60), st.sampled_from([40, 83]))
@pytest.mark.slow
def test_at_every_point_of_a_stream_the_lines_are_the_whole_answers(doc, steps, width):
    cache = BlockCache()
    at, i = 0, 0
    while at < len(doc):
        at = min(len(doc), at + steps[i % len(steps)])
        i += 1
        part = doc[:at]
        assert segments(cache.lines(LOOK, part, width)) == segments(answer_lines(LOOK, part, width)), repr(part)


def test_a_document_with_reference_links_is_drawn_whole_and_still_the_same():
    doc = "See [the docs][d] and more.\n\n- one\n- two\n\n[d]: http://example.com\n\nafter [d]"
    cache = BlockCache()
    for at in range(1, len(doc) + 1):
        assert segments(cache.lines(LOOK, doc[:at], 60)) == segments(answer_lines(LOOK, doc[:at], 60))


def test_a_flush_draws_only_the_block_that_grew(monkeypatch):
    drawn: list[str] = []           # the Markdown source of every render
    real = assistant_message._render

    def counting(look, markdown, width):
        drawn.append(markdown.markup)
        return real(look, markdown, width)

    monkeypatch.setattr(assistant_message, "_render", counting)
    paragraphs = [f"Paragraph {i} says what step {i} of the plan found in `module_{i}.py`." for i in range(40)]
    cache, text = BlockCache(), ""
    for p in paragraphs:                 # one flush per paragraph, as a long answer streams
        text += p + "\n\n"
        cache.lines(LOOK, text, 90)
    whole = len(text)
    # each paragraph drawn about once; drawing the whole text per flush would be 20x the text
    assert sum(len(m) for m in drawn) < 2 * whole, (sum(len(m) for m in drawn), whole)
    assert segments(cache.lines(LOOK, text, 90)) == segments(answer_lines(LOOK, text, 90))


def test_another_width_or_theme_draws_every_block_again():
    text = "# Title\n\nSome text.\n\n- a\n- b\n"
    cache = BlockCache()
    cache.lines(LOOK, text, 90)
    assert segments(cache.lines(LOOK, text, 50)) == segments(answer_lines(LOOK, text, 50))
    light = Look(LOOK.console, {}, False, {"text-primary": "#aa0000"}, Style(bgcolor="#ffffff"))
    assert segments(cache.lines(light, text, 50)) == segments(answer_lines(light, text, 50))
    assert segments(cache.lines(light, text, 50)) != segments(answer_lines(LOOK, text, 50))


def test_a_live_answer_keeps_its_blocks_until_it_settles():
    record = AssistantRecord(live=True)
    record.text = "one\n\ntwo"
    lines = record.draw(LOOK, 60)
    assert record._blocks is not None and segments(lines) == segments(answer_lines(LOOK, record.text, 60))
    record.settle()
    assert record._blocks is None and not record.live
    assert segments(record.draw(LOOK, 60)) == segments(lines)
