"""The conversation: user prompts, streamed assistant text, thinking, tool calls, compaction markers,
errors, one widget module each beside this one. It only renders what the loop reports; it never
decides anything.

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

from typing import Iterable

from textual.containers import VerticalScroll
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownStream

from agent_core import events as ev
from agent_core.security.visible_text import visible
from compaction.entry import Entry

from app.tui.widgets.conversation.assistant_message import AssistantMessage
from app.tui.widgets.conversation.compaction_marker import CompactionMarker
from app.tui.widgets.conversation.earlier_messages import EarlierMessages
from app.tui.widgets.conversation.error_message import ErrorMessage
from app.tui.widgets.conversation.history import entry_widgets
from app.tui.widgets.conversation.live_compaction import LiveCompaction
from app.tui.widgets.conversation.notice_message import NoticeMessage
from app.tui.widgets.conversation.thinking_block import ThinkingBlock
from app.tui.widgets.conversation.tool_block import ToolBlock
from app.tui.widgets.conversation.user_message import UserMessage


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
                             c.cache, c.duration_s, c)
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
            widgets.extend(entry_widgets(e, pending))
        cut = max(0, len(widgets) - self.live_limit)
        self.archived.extend(widgets[:cut])
        live = widgets[cut:]
        self._tools.update({k: b for k, b in pending.items() if b in live})
        if live:
            await self.mount_all(live)
        await self._update_earlier()
        self.anchor()
        return len(widgets)
