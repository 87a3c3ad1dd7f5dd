"""The conversation: user prompts, streamed assistant text, thinking, tool calls, compaction markers,
errors. It only renders what the loop reports; it never decides anything.

Everything here is someone else's text (the model's, a tool's, a file name, a resumed log's), so
every piece passes through `agent_core.security.visible_text` on its way in: an escape sequence
reads `␛[2K` instead of erasing a line, and it is handed to Textual as `Content` (never parsed as
markup), so `[bold]` or `[@click=…]` in a file name is shown as written.

Assistant text is streamed through Textual's `MarkdownStream`, which batches fragments and appends
to the document (only the last block is re-parsed), so a chunk costs the same whether the
conversation holds 2 messages or 2,000. The view follows the bottom (`anchor`) until the user
scrolls up, and picks it up again when they scroll back down.
"""
from __future__ import annotations

import json
import time
from typing import Iterable

from markdown_it import MarkdownIt
from textual.containers import VerticalScroll
from textual.message import Message
from textual.content import Content
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownStream

from agent_core import events as ev
from agent_core.loop.agent import CANCELLED_RESULT
from agent_core.security.visible_text import one_line, visible
from compaction.entry import Entry

from app import format as fmt

# What the user can do about each kind of error (the loop's message says what happened).
ERROR_HINTS = {
    "auth": "Set ANTHROPIC_API_KEY to a valid key, or run `ctxtui --model demo` to work offline.",
    "rate_limit": "The SDK already retried. Wait a little, then send the prompt again.",
    "overloaded": "The API is overloaded. Wait a minute, then send the prompt again.",
    "prompt_too_long": "Run /compact (optionally with a focus) to shrink the context, or /clear to start over.",
    "connection": "Check your network and ANTHROPIC_BASE_URL, then send the prompt again.",
    "server": "The API failed on its side. Send the prompt again.",
    "tool": "The model has been told the tool failed and can try another way.",
    "blocking": "The context is full: run /compact to free space, or /clear to start a new session.",
    "internal": "This is a ctxtui bug. Nothing is lost (the session log keeps everything); please report it.",
}

CANCELLED_TOOL = "Cancelled before it finished (the model is told so)."
TOOL_ARG_KEYS = ("command", "path", "pattern", "focus")


def tool_summary(name: str, args: dict, width: int = 70) -> str:
    """The one argument that says what a call does (the command, the path, the pattern)."""
    for k in TOOL_ARG_KEYS:
        if k in args and args[k]:
            return fmt.one_line(str(args[k]), width)
    return fmt.one_line(json.dumps(args, ensure_ascii=False), width) if args else ""


class UserMessage(Static):
    """A prompt the user sent."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(Content(visible(text)), classes="message")

    def clone(self) -> "UserMessage":
        return UserMessage(self.text)


def text_only_parser() -> MarkdownIt:
    """Textual's Markdown parser with raw HTML off. With it on, an answer that opens with a tag
    line (`<summary>`, `<analysis>`, which Claude writes) is an HTML block, and Textual draws no
    HTML: the answer showed as a blank line. Off, tags are literal text and the rest is Markdown."""
    return MarkdownIt("gfm-like", {"html": False})


class AssistantMessage(Markdown):
    """Assistant text; streamed into while the model writes (the stream parses with the widget's
    parser, so streamed, final and resumed text render alike)."""

    def __init__(self, markdown: str | None = None) -> None:
        super().__init__(visible(markdown) if markdown else markdown, parser_factory=text_only_parser)

    def clone(self) -> "AssistantMessage":
        return AssistantMessage(self.source)


class ThinkingBlock(Collapsible):
    """The model's thinking, collapsed: it is rarely what the user wants to read first."""

    def __init__(self, text: str = "") -> None:
        self.text = text
        self.body = Static(Content(visible(text)), classes="thinking-body")
        super().__init__(self.body, title=f"Thinking · {len(text):,} chars" if text else "Thinking", collapsed=True)

    def clone(self) -> "ThinkingBlock":
        return ThinkingBlock(self.text)

    def append(self, text: str) -> None:
        self.text += text
        self.body.update(Content(visible(self.text)))
        self.title = Content(f"Thinking · {len(self.text):,} chars")


class ToolBlock(Collapsible):
    """One tool call: name and arguments; then the result preview, its size and error state."""

    def __init__(self, call_id: str, name: str, args: dict) -> None:
        self.call_id = call_id
        self.tool_name = name
        self.args = args
        self.summary = tool_summary(name, args)
        self.args_view = Static(Content(visible(json.dumps(args, indent=2, ensure_ascii=False))),
                                classes="tool-args")
        self.result_view = Static(Content("running…"), classes="tool-result")
        super().__init__(self.args_view, self.result_view, title=self._make_title("⚙", ""), collapsed=True,
                         classes="tool -running")
        self.result: tuple[str, int, bool] | None = None
        self.cancelled = False

    def clone(self) -> "ToolBlock":
        block = ToolBlock(self.call_id, self.tool_name, self.args)
        if self.cancelled:
            block.set_cancelled()
        elif self.result is not None:
            block.set_result(*self.result)
        return block

    def _make_title(self, mark: str, tail: str) -> Content:
        return Content.assemble((f"{mark} {one_line(self.tool_name)}", "bold"), "  ", self.summary, (tail, "dim"))

    def set_result(self, preview: str, size: int, is_error: bool) -> None:
        self.result = (preview, size, is_error)
        self.remove_class("-running")
        self.add_class("-error" if is_error else "-ok")
        self.result_view.update(Content(visible(preview) if preview else "(no output)"))
        tail = f"  · {fmt.size(size)}" + ("  · error" if is_error else "")
        self.title = self._make_title("✗" if is_error else "✓", tail)

    def set_cancelled(self) -> None:
        """The call was stopped by a cancel: ⊘ and "cancelled", live or rebuilt from the log (the
        history holds the error result the loop wrote for it), never the running ⚙ nor a failure ✗."""
        self.set_result(CANCELLED_TOOL, 0, True)
        self.cancelled = True
        self.remove_class("-error")
        self.add_class("-cancelled")
        self.title = self._make_title("⊘", "  · cancelled")


class CompactionMarker(Static):
    """A compaction boundary: what ran, why, how much it freed and where the transcript is. Click
    it (or Enter on it) to open the inspector: `Selected` goes up to the app."""

    can_focus = True
    BINDINGS = [("enter", "inspect", "Inspect")]

    class Selected(Message):
        def __init__(self, marker: "CompactionMarker") -> None:
            self.marker = marker
            super().__init__()

    def __init__(self, layer: str, trigger: str, before: int, after: int,
                 transcript_path: str | None = None, action: str = "", cache: dict | None = None,
                 duration_s: float | None = None, event: ev.Compaction | None = None) -> None:
        self.event = event       # the loop's event when it was live (a resumed boundary has none)
        self.compaction_layer, self.trigger = layer, trigger
        self.tokens_before, self.tokens_after = before, after
        self.transcript_path = transcript_path
        self.action = action
        self.cache = cache
        self.duration_s = duration_s
        head = (f"── compacted · {one_line(layer)} ({one_line(trigger)}) · {fmt.tokens(before)} → "
                f"{fmt.tokens(after)} tokens "
                f"(freed {fmt.tokens(max(0, before - after))})")
        if duration_s:
            head += f" in {fmt.duration(duration_s)}"
        parts: list = [(head, "bold")]
        if action:
            # The layer's own words often repeat the transcript path: name it once, below.
            said = action.replace(transcript_path, "the transcript") if transcript_path else action
            parts.append(("\n   " + visible(said), ""))
        clause = fmt.cache_clause(cache)
        if clause and "per call" not in action:   # the layer's action usually says it already
            parts.append(("\n   " + clause, "dim"))
        if transcript_path:
            parts += ["\n   transcript: ", (fmt.path(transcript_path), "underline")]
        super().__init__(Content.assemble(*parts), classes="compaction")

    def clone(self) -> "CompactionMarker":
        return CompactionMarker(self.compaction_layer, self.trigger, self.tokens_before, self.tokens_after,
                                self.transcript_path, self.action, self.cache, self.duration_s, self.event)

    def on_click(self) -> None:
        self.post_message(self.Selected(self))

    def action_inspect(self) -> None:
        self.post_message(self.Selected(self))


class LiveCompaction(Collapsible):
    """A summary being written: the elapsed time in the title, the text streaming into the body.
    Open while it runs; once the call ends it collapses to one line (the marker follows)."""

    def __init__(self, tokens_before: int = 0) -> None:
        self.text = ""
        self.tokens_before = tokens_before
        self.started = time.monotonic()
        self.outcome: str | None = None       # the closing title, once ended
        self.body = Static(Content("waiting for the model…"), classes="live-summary-body")
        super().__init__(self.body, title=self._heading(), collapsed=False, classes="live-summary -running")

    def clone(self) -> "LiveCompaction":
        w = LiveCompaction(self.tokens_before)
        w.text, w.outcome = self.text, self.outcome
        w.body.update(Content(visible(self.text) or "(no text)"))
        w.title = Content(self.outcome) if self.outcome is not None else self._heading()
        w.collapsed = self.outcome is not None
        return w

    def on_mount(self) -> None:
        if self.outcome is None:
            self._ticker = self.set_interval(1.0, self._tick)

    def _heading(self) -> Content:
        elapsed = fmt.duration(time.monotonic() - self.started)
        size = f" · {len(self.text):,} chars" if self.text else ""
        return Content(f"⟳ compacting · summarizing {fmt.tokens(self.tokens_before)} tokens · {elapsed}{size}")

    def _tick(self) -> None:
        if self.outcome is None:
            self.title = self._heading()

    def append(self, text: str) -> None:
        self.text += text
        self.body.update(Content(visible(self.text)))
        self.title = self._heading()

    def end(self, ok: bool, duration_s: float, message: str = "") -> None:
        ticker = getattr(self, "_ticker", None)
        if ticker is not None:
            ticker.stop()
        took = fmt.duration(duration_s)
        self.outcome = (f"✓ summary written in {took} · {len(self.text):,} chars" if ok
                        else f"✗ summary failed after {took}: {fmt.one_line(message, 80)}")
        self.title = Content(self.outcome)     # the error's words are outside text: never markup
        self.remove_class("-running")
        self.add_class("-ok" if ok else "-error")
        if not self.text:
            self.body.update(Content("(no text)"))
        self.collapsed = True


class ErrorMessage(Static):
    """An error with what to do about it."""

    def __init__(self, kind: str, message: str, retryable: bool = False) -> None:
        self.error_kind, self.message, self.retryable = kind, message, retryable
        hint = ERROR_HINTS.get(kind, "")
        parts: list = [(f"✗ {one_line(kind.replace('_', ' '))}: ", "bold"), visible(message)]
        if retryable:
            parts.append(("  (retryable)", "dim"))
        if hint:
            parts += ["\n  → ", (hint, "italic")]
        super().__init__(Content.assemble(*parts), classes="error")

    def clone(self) -> "ErrorMessage":
        return ErrorMessage(self.error_kind, self.message, self.retryable)


class NoticeMessage(Static):
    """A line from the loop or the app that is neither conversation nor error."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(Content(visible(text)), classes="notice")

    def clone(self) -> "NoticeMessage":
        return NoticeMessage(self.text)


class SummaryBlock(Collapsible):
    """A compaction summary (on resume): collapsed, it is long and the marker says what happened."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(Static(Content(visible(text))), title=f"Summary · {len(text):,} chars", collapsed=True,
                         classes="summary")

    def clone(self) -> "SummaryBlock":
        return SummaryBlock(self.text)


class EarlierMessages(Static):
    """The top line when older messages are paged out; click (or Enter) shows a page more."""

    can_focus = True
    BINDINGS = [("enter", "show", "Show earlier")]

    class Show(Message):
        pass

    def set_count(self, n: int, page: int) -> None:
        self.update(Content(f"▲ {n:,} earlier messages — click or press Enter to show {min(n, page):,} more "
                            "(the session log keeps everything: /transcripts)"))

    def on_click(self) -> None:
        self.post_message(self.Show())

    def action_show(self) -> None:
        self.post_message(self.Show())


class Conversation(VerticalScroll):
    """The scrolling conversation. Methods are called by the app for each loop event.

    Only the latest `live_limit` messages stay mounted: Textual lays out every mounted widget on
    each change, so a conversation of thousands of messages would make every append slower. Older
    ones are paged out (kept as unmounted copies) behind an `EarlierMessages` line, which shows
    them again a page at a time."""

    DEFAULT_CSS = """
    Conversation { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None, live_limit: int = 150,
                 page: int = 50) -> None:
        super().__init__(id=id, classes=classes)
        self._stream: MarkdownStream | None = None
        self._current_md: AssistantMessage | None = None
        self._thinking: ThinkingBlock | None = None
        self._tools: dict[str, ToolBlock] = {}
        self._live_compaction: LiveCompaction | None = None
        self.live_limit = live_limit
        self.page = page
        self.archived: list = []           # paged-out messages, oldest first (unmounted copies)
        self._earlier: EarlierMessages | None = None

    def on_mount(self) -> None:
        self.anchor()

    @property
    def streaming(self) -> bool:
        return self._stream is not None

    @property
    def messages(self) -> list:
        """The mounted message widgets (without the paging line)."""
        return [w for w in self.children if not isinstance(w, EarlierMessages)]

    async def _add(self, *widgets) -> None:
        await self.mount_all(widgets)
        await self._trim()

    async def _trim(self) -> None:
        """Page out the oldest messages once there are a page more than `live_limit`, but only
        while following the bottom: never pull content from under someone reading it."""
        live = self.messages
        if len(live) <= self.live_limit + self.page or not self._following():
            return
        old = live[: len(live) - self.live_limit]
        self.archived.extend(w.clone() for w in old)
        for w in old:
            if isinstance(w, ToolBlock):
                self._tools.pop(w.call_id, None)
        await self.remove_children(old)
        await self._update_earlier()

    def _following(self) -> bool:
        # Textual marks an anchored view "released" when the user scrolls away from the bottom
        # and clears that when they come back (Widget._check_anchor); there is no public getter.
        return self.is_anchored and not getattr(self, "_anchor_released", False)

    async def _update_earlier(self) -> None:
        if self.archived:
            if self._earlier is None:
                self._earlier = EarlierMessages(classes="notice")
                await self.mount(self._earlier, before=0)
            self._earlier.set_count(len(self.archived), self.page)
        elif self._earlier is not None:
            await self._earlier.remove()
            self._earlier = None

    async def show_earlier(self) -> int:
        """Mount the last page of paged-out messages above the others. Returns how many."""
        if not self.archived:
            return 0
        batch = self.archived[-self.page:]
        del self.archived[-self.page:]
        for w in batch:
            if isinstance(w, ToolBlock):
                self._tools.setdefault(w.call_id, w)
        await self.mount_all(batch, after=self._earlier) if self._earlier else await self.mount_all(batch, before=0)
        await self._update_earlier()
        return len(batch)

    async def on_earlier_messages_show(self, event: EarlierMessages.Show) -> None:
        event.stop()
        await self.show_earlier()

    @property
    def current_markdown(self) -> AssistantMessage | None:
        return self._current_md

    # -- streaming text ---------------------------------------------------------------------------
    async def append_text(self, text: str) -> None:
        if self._stream is None:
            self._thinking = None
            md = AssistantMessage()
            self._current_md = md
            await self._add(md)
            self._stream = Markdown.get_stream(md)
        await self._stream.write(visible(text))

    async def end_text(self) -> None:
        """Finish the current assistant block (the stream flushes what it still holds)."""
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()
        self._thinking = None

    async def append_thinking(self, text: str) -> None:
        if self._stream is not None:
            await self.end_text()
        if self._thinking is None:
            self._thinking = ThinkingBlock()
            await self._add(self._thinking)
        self._thinking.append(text)

    # -- discrete items ---------------------------------------------------------------------------
    async def add_user(self, text: str) -> UserMessage:
        await self.end_text()
        w = UserMessage(text)
        await self._add(w)
        # Sending a prompt means the user wants to see the answer: follow the bottom again.
        self.anchor()
        return w

    async def add_tool_call(self, call_id: str, name: str, args: dict) -> ToolBlock:
        await self.end_text()
        block = ToolBlock(call_id, name, args)
        self._tools[call_id] = block
        await self._add(block)
        return block

    def set_tool_result(self, call_id: str, preview: str, size: int, is_error: bool) -> None:
        block = self._tools.get(call_id)
        if block is not None:
            block.set_result(preview, size, is_error)

    async def add_compaction(self, c: ev.Compaction) -> CompactionMarker:
        await self.end_text()
        w = CompactionMarker(c.layer, c.trigger, c.tokens_before, c.tokens_after, c.transcript_path, c.action,
                             getattr(c, "cache", None), c.duration_s, c)
        await self._add(w)
        return w

    @property
    def live_compaction(self) -> LiveCompaction | None:
        """The summary being written, if one is."""
        return self._live_compaction

    async def start_compaction(self, e: ev.CompactionStarted) -> LiveCompaction:
        await self.end_text()
        w = LiveCompaction(e.tokens_before)
        self._live_compaction = w
        await self._add(w)
        return w

    def append_compaction(self, text: str) -> None:
        if self._live_compaction is not None:
            self._live_compaction.append(text)

    def end_compaction(self, e: ev.CompactionEnded) -> None:
        w, self._live_compaction = self._live_compaction, None
        if w is not None:
            w.end(e.ok, e.duration_s, e.message)

    async def add_error(self, e: ev.Error) -> ErrorMessage:
        await self.end_text()
        w = ErrorMessage(e.kind, e.message, e.retryable)
        await self._add(w)
        return w

    async def add_notice(self, text: str) -> NoticeMessage:
        await self.end_text()
        w = NoticeMessage(text)
        await self._add(w)
        return w

    async def clear(self) -> None:
        await self.end_text()
        self._tools.clear()
        self._live_compaction = None
        self.archived.clear()
        self._earlier = None
        await self.remove_children()
        self.anchor()

    # -- resume -----------------------------------------------------------------------------------
    async def load_entries(self, entries: Iterable[Entry]) -> int:
        """Rebuild the view from a history (resume): the latest `live_limit` messages are
        mounted, older ones paged out. Returns the number of message widgets made."""
        widgets: list = []
        pending: dict[str, ToolBlock] = {}
        for e in entries:
            widgets.extend(self._entry_widgets(e, pending))
        cut = max(0, len(widgets) - self.live_limit)
        self.archived.extend(widgets[:cut])
        live = widgets[cut:]
        self._tools.update({k: b for k, b in pending.items() if b in live})
        if live:
            await self.mount_all(live)
        await self._update_earlier()
        self.anchor()
        return len(widgets)

    def _entry_widgets(self, e: Entry, pending: dict[str, ToolBlock]) -> list:
        if e.kind == "compact_boundary":
            m = e.meta
            return [CompactionMarker(m.get("layer", "?"), m.get("trigger", "?"), int(m.get("tokens_before", 0)),
                                     int(m.get("tokens_after", 0)), m.get("transcript_path"))]
        if e.kind in ("summary", "attachment", "snip_marker"):
            return [SummaryBlock(e.text() or json.dumps(e.content)[:2000])]
        out: list = []
        for b in e.content:
            t = b.get("type")
            if t == "text" and b.get("text"):
                out.append(UserMessage(b["text"]) if e.role == "user" else AssistantMessage(b["text"]))
            elif t == "thinking":
                out.append(ThinkingBlock(b.get("thinking", "")))
            elif t == "tool_use":
                block = ToolBlock(b.get("id", ""), b.get("name", "?"), b.get("input") or {})
                pending[block.call_id] = block
                out.append(block)
            elif t == "tool_result":
                block = pending.get(b.get("tool_use_id", ""))
                if block is None:
                    continue
                text = _result_text(b.get("content", ""))
                if b.get("is_error") and text == CANCELLED_RESULT:
                    block.set_cancelled()
                else:
                    block.set_result(fmt.one_line(text, 2000) if len(text) > 2000 else text,
                                     len(text.encode()), bool(b.get("is_error")))
        return out


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(x.get("text", "") for x in content if isinstance(x, dict))
