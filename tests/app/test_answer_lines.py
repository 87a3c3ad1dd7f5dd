"""An answer is drawn from its Markdown into lines the conversation keeps: no widget, rendered once
per width and text, whatever the number of layouts; someone else's text stays text."""
from __future__ import annotations

from app.tui.app import CtxApp
from app.tui.widgets.conversation import assistant_message
from app.tui.widgets.conversation.answer_record import AssistantRecord
from app.tui.widgets.conversation.container import Conversation
from tests.pilot_until import until
from tests.tui_fakes import FakeAgent

ANSWER = ("## Findings\n\n- `compaction/` holds the engine\n- `app/` holds the TUI\n\n"
          "```python\ndef hello():\n    return 'world'\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")


def shown(conv: Conversation, md: AssistantRecord) -> str:
    return conv.text_of(md)


def view_strips(conv: Conversation) -> list:
    """The rows the conversation hands the screen, top to bottom."""
    return [conv.render_line(y) for y in range(conv.scrollable_content_region.height)]


async def test_an_answer_is_no_widget_and_is_rendered_once_per_width(monkeypatch):
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        renders: list = []             # (width, lines) of each render of an answer
        real = assistant_message.answer_lines

        def counting(look, source, width):
            lines = real(look, source, width)
            if source == ANSWER:
                renders.append((width, lines))
            return lines

        real_blocks = assistant_message.BlockCache.lines

        def counting_blocks(cache, look, source, width):     # while it streams, block by block
            lines = real_blocks(cache, look, source, width)
            if source == ANSWER:
                renders.append((width, lines))
            return lines

        monkeypatch.setattr(assistant_message, "answer_lines", counting)
        monkeypatch.setattr(assistant_message.BlockCache, "lines", counting_blocks)
        conv = app.conversation
        await conv.append_text(ANSWER)
        await conv.end_text()
        await pilot.pause()
        md = conv.current_markdown
        assert isinstance(md, AssistantRecord) and md.text == ANSWER
        assert not list(conv.walk_children())               # no widget per answer, nor per block
        text = shown(conv, md)
        for part in ("Findings", "compaction/ holds the engine", "def hello():", "return 'world'", "a", "1"):
            assert part in text, part
        lines = renders[-1][1]
        assert len(lines) > 5 and text == "\n".join(s.text.rstrip() for s in lines)
        # the scroll range is every line drawn, the answer's included
        assert conv.virtual_size.height == sum(len(conv.text_of(r).split("\n")) for r in conv.messages)
        before = len(renders)
        for i in range(5):                                   # layouts for other reasons: no new render
            await conv.add_notice(f"notice {i}")
            await pilot.pause()
        assert len(renders) == before, renders
        await pilot.resize_terminal(90, 40)     # new widths (the sidebar folds away at 90): once each
        await pilot.pause()
        after = [w for w, _ in renders[before:]]
        width = conv.scrollable_content_region.width
        assert after and after[-1] == width and len(after) == len(set(after)) <= 2, after
        assert all(s.cell_length <= width for s in renders[-1][1])
        assert shown(conv, md) == "\n".join(s.text.rstrip() for s in renders[-1][1])


async def test_streamed_text_is_appended_a_batch_at_a_time_and_kept_whole():
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        conv = app.conversation
        for i in range(0, len(ANSWER), 5):
            await conv.append_text(ANSWER[i:i + 5])
        md = conv.current_markdown
        # drawn while still streaming, by the flush timer on its own time
        await until(pilot, lambda: md.text == ANSWER and "def hello():" in shown(conv, md), "the streamed answer drawn")
        assert conv.streaming
        await conv.end_text()
        assert not conv.streaming
        assert "def hello():" in shown(conv, md) and "| 1" not in shown(conv, md)


async def test_hostile_text_in_an_answer_is_drawn_as_text():
    """An escape sequence, console markup and a link: shown as written (the escape as ␛), no
    terminal hyperlink, no style from the markup."""
    hostile = "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\ and [bold red]not bold[/] and [site](http://x.test)"
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        conv = app.conversation
        await conv.append_text(hostile)
        await conv.end_text()
        await pilot.pause()
        md = conv.current_markdown
        text = " ".join(shown(conv, md).split())
        assert "\x1b" not in text and "␛" in text
        assert "[bold red]not bold[/]" in text
        assert "site (http://x.test)" in text
        strips = view_strips(conv)                         # what the screen gets
        assert "[bold red]not bold[/]" in " ".join(" ".join(s.text for s in strips).split())
        segments = [seg for strip in strips for seg in strip]
        assert not any("\x1b" in seg.text for seg in segments)
        assert not any(seg.style and seg.style.link for seg in segments)
        assert not any(seg.style and seg.style.color and seg.style.color.name == "red" for seg in segments)


CODE_ANSWERS = [ANSWER, "```\n\n  indented\n\n```", "```python\n" + "y" * 300 + " = 1\n```",
                "- a list\n  ```js\n  let x = 1;\n  ```\n", "    an indented code block\n    second line\n",
                "```rust\nfn main() {\n\tprintln!(\"tab\");\n}\n```"]


def test_code_blocks_draw_the_lines_rich_draws():
    """WholeCodeBlock renders a block as one text for speed; the lines are Rich's own, at every
    width and in both themes (colours included)."""
    from rich.console import Console
    from rich.markdown import Markdown
    from app.tui.widgets.conversation.assistant_message import AnswerMarkdown, LeftHeading

    class RichCode(AnswerMarkdown):
        elements = {**Markdown.elements, "heading_open": LeftHeading}

    console = Console(width=120, color_system="truecolor", force_terminal=True)
    for width in (12, 40, 66, 119):
        options = console.options.update(width=width, height=None, highlight=False)
        for theme in ("monokai", "default"):
            for md in CODE_ANSWERS:
                ours = console.render_lines(AnswerMarkdown(md, code_theme=theme), options, pad=False)
                assert ours == console.render_lines(RichCode(md, code_theme=theme), options, pad=False), \
                    (width, theme, md[:20])


def test_an_answer_markdown_has_every_attribute_rich_gives_its_markdown():
    """AnswerMarkdown sets Rich's attributes itself (Rich's __init__ builds a parser it would
    throw away): an upgrade of Rich that adds one must show here, not as a broken render."""
    from rich.markdown import Markdown
    from app.tui.widgets.conversation.assistant_message import AnswerMarkdown, text_only_parser

    ours = AnswerMarkdown("# Title\n\nsome `code`", code_theme="monokai")
    rich = Markdown("# Title\n\nsome `code`", code_theme="monokai", hyperlinks=False)
    assert set(vars(rich)) <= set(vars(ours)), set(vars(rich)) - set(vars(ours))
    for name in vars(rich):
        if name != "parsed":
            assert getattr(ours, name) == getattr(rich, name), name
    assert [t.type for t in ours.parsed] == [t.type for t in text_only_parser().parse("# Title\n\nsome `code`")]


def test_a_closing_tag_after_a_list_is_its_own_line_and_code_is_left_alone():
    """`</summary>` right after a list item was drawn inside the item (a lazy continuation line).
    A tag line gets its own line; inside fenced code nothing moves."""
    from rich.console import Console
    from app.tui.widgets.conversation.assistant_message import AnswerMarkdown, separate_tag_lines

    console = Console(width=60, color_system=None)

    def lines(md: str) -> list[str]:
        rendered = console.render_lines(AnswerMarkdown(md, code_theme="monokai"), console.options, pad=False)
        return ["".join(s.text for s in line).rstrip() for line in rendered]

    shown = lines("<summary>\n- item one\n- item two\n</summary>\n\nAfter.")
    assert "</summary>" in shown and not any("item two" in line and "</summary>" in line for line in shown)
    assert shown.index("</summary>") > max(i for i, line in enumerate(shown) if "item two" in line)
    for code in ("```xml\n<a>\n</a>\n```", "~~~\n<b>\n  </b>\n~~~", "````\n```\n<c>\n````"):
        assert separate_tag_lines(code) == code            # fenced code: untouched
    assert separate_tag_lines("text\n<b>inline</b> and more") == "text\n<b>inline</b> and more"
    assert separate_tag_lines("a\n    <indented>\nb") == "a\n    <indented>\nb"      # four spaces: code
    assert separate_tag_lines("- x\n</s>\ny") == "- x\n\n</s>\n\ny"


def test_preload_loads_the_code_highlighter_the_first_answer_would_load():
    """In a fresh process (Pygments loads a lexer's module and a theme's style on first use):
    none of them before the preload, all after, so the first code block pays for no import."""
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415
    wanted = ["pygments.lexers.python", "pygments.styles.monokai", "pygments.styles.default"]
    code = ("import sys\n"
            "from app.tui.widgets.conversation import answer_record\n"
            f"wanted = {wanted!r}\n"
            "before = [m for m in wanted if m in sys.modules]\n"
            "answer_record.preload()\n"
            "print(before, [m for m in wanted if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"[] {wanted!r}"


def test_a_closing_tag_indented_under_a_list_item_is_drawn_flush_left_on_its_own_line():
    """A summary's `</summary>` indented like the last item's text (`1. a` then three spaces, `- a`
    then two or four, a tab), even after a blank line, was drawn inside that item; it is its own
    line, flush left. Indented code outside a list stays code."""
    from rich.console import Console
    from app.tui.widgets.conversation.assistant_message import AnswerMarkdown, separate_tag_lines

    console = Console(width=60, color_system=None)

    def lines(md: str) -> list[str]:
        rendered = console.render_lines(AnswerMarkdown(md, code_theme="monokai"), console.options, pad=False)
        return ["".join(s.text for s in line).rstrip() for line in rendered]

    for tail in ("   </summary>", "\n   </summary>", "  </summary>", "    </summary>", "\t</summary>"):
        for head in ("1. Primary request\n2. Files read", "- primary request\n- files read"):
            shown = lines(f"<summary>\n{head}\n{tail}\n\nAfter.")
            assert "</summary>" in shown, (head, tail, shown)       # a line of its own, at column 0
            assert shown.index("</summary>") > max(i for i, line in enumerate(shown) if "iles read" in line)
    assert separate_tag_lines("para\n\n    <code>\n") == "para\n\n    <code>\n"   # not in a list: code
