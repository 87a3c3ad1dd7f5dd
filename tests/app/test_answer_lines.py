"""The answer widget draws its Markdown from cached lines: one widget per answer, rendered once per
width and text, whatever the number of layouts; someone else's text stays text."""
from __future__ import annotations

from app.tui.app import CtxApp
from app.tui.widgets.conversation.assistant_message import AssistantMessage
from tests.tui_fakes import FakeAgent

ANSWER = ("## Findings\n\n- `compaction/` holds the engine\n- `app/` holds the TUI\n\n"
          "```python\ndef hello():\n    return 'world'\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")


def shown(md: AssistantMessage) -> str:
    return "\n".join(s.text for s in md.lines())


async def test_an_answer_is_one_widget_rendered_once_per_width(monkeypatch):
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        renders = []
        real = AssistantMessage._render

        def counting(md, width, dark):
            renders.append(width)
            return real(md, width, dark)

        monkeypatch.setattr(AssistantMessage, "_render", counting)
        await app.conversation.append_text(ANSWER)
        await app.conversation.end_text()
        await pilot.pause()
        md = app.conversation.current_markdown
        assert md is not None and not md.children           # no widget per block
        text = shown(md)
        for part in ("Findings", "compaction/ holds the engine", "def hello():", "return 'world'", "a", "1"):
            assert part in text, part
        assert md.size.height == len(md.lines()) > 5
        before = len(renders)
        for i in range(5):                                   # layouts for other reasons: no new render
            await app.conversation.add_notice(f"notice {i}")
            await pilot.pause()
        assert len(renders) == before, renders
        await pilot.resize_terminal(90, 40)     # new widths (the sidebar folds away at 90): once each
        await pilot.pause()
        after = renders[before:]
        assert after and after[-1] == md.size.width and len(after) == len(set(after)) <= 2, renders
        assert all(s.cell_length <= md.size.width for s in md.lines())


async def test_streamed_text_is_appended_a_batch_at_a_time_and_kept_whole():
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        for i in range(0, len(ANSWER), 5):
            await app.conversation.append_text(ANSWER[i:i + 5])
        await pilot.pause(0.3)
        md = app.conversation.current_markdown
        assert app.conversation.streaming and md.source == ANSWER
        await app.conversation.end_text()
        assert not app.conversation.streaming
        assert "def hello():" in shown(md)


async def test_hostile_text_in_an_answer_is_drawn_as_text():
    """An escape sequence, console markup and a link: shown as written (the escape as ␛), no
    terminal hyperlink, no style from the markup."""
    hostile = "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\ and [bold red]not bold[/] and [site](http://x.test)"
    app = CtxApp(FakeAgent(), clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.conversation.append_text(hostile)
        await app.conversation.end_text()
        await pilot.pause()
        md = app.conversation.current_markdown
        text = " ".join(shown(md).split())
        assert "\x1b" not in text and "␛" in text
        assert "[bold red]not bold[/]" in text
        assert "site (http://x.test)" in text
        segments = [seg for strip in md.lines() for seg in strip]
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
