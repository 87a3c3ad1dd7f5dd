"""The model's answer as Markdown, drawn as lines.

Textual's Markdown widget is a tree (a widget per paragraph, list item, code block and table
cell), and every frame that lays the screen out measures and places each of them again: three
answers a turn made the TUI turn cost 12-18x the same turn headless. Here the answer is rendered
by Rich's Markdown into strips that the conversation keeps. While the model writes, the gathered
text (container.TEXT_FLUSH_S) is rendered again as a whole; a finished answer is rendered once
per width.

Raw HTML is off (`text_only_parser`): an answer that opens with a tag line (`<summary>`) is text.
Links are drawn as text with their address, never as terminal hyperlinks."""
from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock, Heading, Markdown, MarkdownElement, UnknownElement
from rich.padding import Padding
from rich.segment import Segment
from rich.syntax import Syntax
from rich.text import Text
from rich.theme import Theme
from textual.strip import Strip

from app.tui.widgets.conversation.draw import Look


@lru_cache(maxsize=1)
def text_only_parser() -> MarkdownIt:
    """GitHub-like Markdown with raw HTML off: with it on, an answer that opens with a tag line
    (`<summary>`, `<analysis>`, which Claude writes) is an HTML block, and HTML is not drawn: the
    answer showed as a blank line. Off, tags are literal text and the rest is Markdown. One parser
    for every render: a streamed answer is parsed again ten times a second."""
    return MarkdownIt("gfm-like", {"html": False})


# A line that is only an XML-style tag (`<summary>`, `</analysis>`), as Claude writes around parts
# of an answer, indented at most three spaces (four is code).
_TAG_LINE = re.compile(r"^ {0,3}</?[A-Za-z][A-Za-z0-9_-]*(?:\s[^<>]*)?>\s*$")
# The same line at any indent (under a list item a tag indented like the item's text, or by four,
# is the item's continuation, not code).
_INDENTED_TAG_LINE = re.compile(r"^[ \t]*</?[A-Za-z][A-Za-z0-9_-]*(?:\s[^<>]*)?>\s*$")
_LIST_ITEM = re.compile(r"^[ \t]*(?:>[ \t]*)*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def separate_tag_lines(source: str) -> str:
    """The answer with a blank line around each tag-only line outside code, so the tag reads as
    its own line: right after a list, `</summary>` was a lazy continuation of the last item and
    was drawn inside it."""
    out: list[str] = []
    fence: str | None = None
    in_list = False        # the last lines were a list's: an indented line there continues an item
    lines = source.split("\n")
    for i, line in enumerate(lines):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            out.append(line)
            continue
        if opened:
            fence = opened.group(1)
            out.append(line)
            continue
        if _TAG_LINE.match(line) or (in_list and _INDENTED_TAG_LINE.match(line)):
            # Flush left: indented under a list item (by its text's indent, or more) it was drawn
            # as part of the item even after a blank line.
            if out and out[-1].strip():
                out.append("")
            out.append(line.strip())
            if i + 1 < len(lines) and lines[i + 1].strip():
                out.append("")
            in_list = False
            continue
        if _LIST_ITEM.match(line):
            in_list = True
        elif line.strip() and not line[:1].isspace():
            in_list = False
        out.append(line)
    return "\n".join(out)


class LeftHeading(Heading):
    """Headings flush left and unboxed, as a chat reads (Rich centres them and boxes the first)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = self.text
        text.justify = "left"
        if self.tag in ("h1", "h2"):
            yield Text("")
        yield text


class WholeCodeBlock(CodeBlock):
    """A code block drawn as one highlighted text: the same lines as Rich's (word-wrapped, padded
    by one, on the theme's background), but Rich's Syntax lays out each source line as a separate
    render, most of an answer's cost when it quotes code (an answer with two 30-line blocks:
    12 ms -> 9 ms)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        code = str(self.text).rstrip()
        syntax = Syntax(code, self.lexer_name, theme=self.theme, word_wrap=True, padding=1)
        text = syntax.highlight(code)
        text.remove_suffix("\n")
        yield Padding(text, 1, style=Syntax.get_theme(self.theme).get_background_style(), expand=True)


class _Carry(MarkdownElement):
    """Draws nothing; stands first in a block drawn on its own so that the block starts as it
    would in the whole document after a block that asks for a blank line below it: Rich puts that
    line in only when the block has no inner element of its own to decide it."""

    new_line = True

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        return iter(())


_CARRY_TYPE = "ctxtui_carry"
_CARRY = Token(_CARRY_TYPE, "", 0)


class AnswerMarkdown(Markdown):
    """Rich's Markdown with the answer's parser, left headings and whole code blocks."""

    elements = {**Markdown.elements, "heading_open": LeftHeading, "fence": WholeCodeBlock,
                "code_block": WholeCodeBlock, _CARRY_TYPE: _Carry}

    def __init__(self, markup: str, *, code_theme: str) -> None:
        # Rich's __init__ builds a new parser and parses its text with it: a sixth of drawing a
        # short answer, for a parser this class replaces. The same attributes, set here (a test
        # checks them against Rich's, so an upgrade that adds one is noticed).
        self.setup(markup, text_only_parser().parse(separate_tag_lines(markup)), code_theme=code_theme)

    def setup(self, markup: str, parsed: list[Token], *, code_theme: str) -> None:
        """The attributes Rich's __init__ sets, with `parsed` already made (one block of a
        document, for BlockCache)."""
        self.markup = markup
        self.parsed = parsed
        self.code_theme = code_theme
        self.justify = None
        self.style = "none"
        self.hyperlinks = False
        self.inline_code_lexer = None
        self.inline_code_theme = code_theme


def markdown_theme(colors: dict[str, str]) -> Theme:
    """Rich's Markdown styles in the app theme's colours (Textual's own Markdown widget draws
    headings in the primary colour and inline code in the accent), so answers match the screen."""
    def pick(name: str, fallback: str) -> str:
        value = colors.get(name, "")
        return value if value.startswith("#") and len(value) in (4, 7) else fallback
    return _theme(pick("text-primary", "blue"), pick("text-accent", "yellow"))


@lru_cache(maxsize=8)
def _theme(primary: str, accent: str) -> Theme:
    """One Theme per pair of colours (built once, not on every streamed render)."""
    return Theme({
        "markdown.h1": f"bold underline {primary}", "markdown.h2": f"bold {primary}",
        "markdown.h3": f"bold {primary}", "markdown.h4": f"italic {primary}",
        "markdown.h5": "italic", "markdown.h6": "dim italic",
        "markdown.code": f"bold {accent}", "markdown.item.bullet": f"bold {accent}",
        "markdown.item.number": f"bold {accent}", "markdown.link": f"underline {primary}",
        "markdown.link_url": "dim", "markdown.block_quote": "italic",
        "markdown.table.border": "dim", "markdown.table.header": f"bold {primary}",
    })


def code_theme(dark: bool) -> str:
    return "monokai" if dark else "default"


def warm() -> None:
    """Load what the first code block would load (Pygments imports a language's lexer and a
    theme's style on first use: about 30 ms for Python and the two themes): called in idle time
    after the first frame, so the first answer that quotes code does not pay for it."""
    Syntax("", "python").lexer    # noqa: B018  (the property loads the lexer's module)
    for dark in (True, False):
        Syntax.get_theme(code_theme(dark))


def answer_lines(look: Look, source: str, width: int) -> list[Strip]:
    """An answer's Markdown as lines `width` wide with a column of padding each side, in the
    theme's colours (one render per width and text: the conversation keeps the lines)."""
    if not source.strip():
        return []
    markdown = AnswerMarkdown(source, code_theme=code_theme(look.dark))
    return _render(look, markdown, width)


def _render(look: Look, markdown: Markdown, width: int) -> list[Strip]:
    console = look.console
    options = console.options.update(width=max(1, width - 2), height=None, highlight=False)
    with console.use_theme(markdown_theme(look.variables)):
        lines = console.render_lines(markdown, options, pad=False)
    pad = Segment(" ")
    return [Strip(Segment.apply_style([pad, *line, pad], look.base)) for line in lines]


class BlockCache:
    """The drawn lines of a streamed answer's finished blocks, so a flush draws only what changed.

    Rich's Markdown renders each top-level block (a paragraph, a list, a code block, a heading) on
    its own, so the answer's lines are its blocks' lines one after the other, each drawn as it
    starts in the document (after a block that wants a blank line below it, or not). While the
    model writes only the last block grows: drawing the whole answer ten times a second made a
    streamed answer cost the square of its length (a 20 KB answer: seconds of CPU). Blocks are
    keyed by their source lines; a document with link reference definitions (which reach across
    blocks) is drawn whole."""

    __slots__ = ("_look", "_width", "_lines")

    def __init__(self) -> None:
        self._look: Look | None = None
        self._width = 0
        self._lines: dict[tuple[bool, str], list[Strip]] = {}

    def lines(self, look: Look, source: str, width: int) -> list[Strip]:
        if not source.strip():
            return []
        if look is not self._look or width != self._width:    # another theme or width: none holds
            self._look, self._width, self._lines = look, width, {}
        env: dict = {}
        text = separate_tag_lines(source)
        tokens = text_only_parser().parse(text, env)
        theme = code_theme(look.dark)
        if env.get("references"):
            return _render(look, _of_tokens(tokens, source, theme), width)
        rows = text.split("\n")
        drawn: dict[tuple[bool, str], list[Strip]] = {}
        out: list[Strip] = []
        carry = False
        for block in _top_level(tokens):
            first = block[0]
            start, end = first.map if first.map else (0, len(rows))
            key = (carry, "\n".join(rows[start:end]))
            lines = self._lines.get(key)
            if lines is None:
                lines = _render(look, _of_tokens([_CARRY, *block] if carry else block, key[1], theme), width)
            drawn[key] = lines
            out.extend(lines)
            carry = (AnswerMarkdown.elements.get(first.type) or UnknownElement).new_line
        self._lines = drawn          # the blocks of this text only: a grown last block is dropped
        return out


def _top_level(tokens: list[Token]) -> Iterator[list[Token]]:
    """The document's top-level blocks, each its tokens from opening to closing."""
    start = depth = 0
    for i, token in enumerate(tokens):
        depth += token.nesting
        if depth == 0:
            yield tokens[start:i + 1]
            start = i + 1


def _of_tokens(tokens: list[Token], markup: str, theme: str) -> AnswerMarkdown:
    markdown = AnswerMarkdown.__new__(AnswerMarkdown)
    markdown.setup(markup, tokens, code_theme=theme)
    return markdown
