"""The conversation: user prompts, streamed assistant text, thinking, tool calls, compaction markers,
errors, one widget module each beside this one. It only renders what the loop reports; it never
decides anything.

Everything here is someone else's text (the model's, a tool's, a file name, a resumed log's), so
every piece passes through `agent_core.security.visible_text` on its way in: an escape sequence
reads `␛[2K` instead of erasing a line, and it is handed to Textual as `Content` (never parsed as
markup), so `[bold]` or `[@click=…]` in a file name is shown as written.

Assistant text goes to one `AssistantMessage` widget per answer, which renders its Markdown to
cached lines (assistant_message.py), so a layout asks it for a height, not for dozens of block
widgets. The deltas of one model call come in bursts: they are gathered and appended at most every
`TEXT_FLUSH_S` (a tenth of a second, faster than anyone reads), not once per delta nor once per
frame: each append renders the answer again. The view follows the bottom (`anchor`) until the user
scrolls up, and picks it up again when they scroll back down.

Textual lays out every mounted widget on each change, so only the latest messages stay mounted
(`live_limit` messages, at most about `widget_limit` widgets). Older ones are paged out as data,
a small record per message (its text, a tool call's name, input and result, ...), behind an
`EarlierMessages` line that builds them again a page at a time. A thousand-turn session holds a
thousand turns of records, not of widgets.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator

from textual.containers import VerticalScroll
from textual.widget import Widget

from agent_core import events as ev
from agent_core.security.visible_text import visible
from compaction.entry import Entry

from app.tui.widgets.conversation.answer_record import AssistantRecord
from app.tui.widgets.conversation.archive import Archive
from app.tui.widgets.conversation.compaction_marker import CompactionMarker
from app.tui.widgets.conversation.earlier_messages import EarlierMessages
from app.tui.widgets.conversation.error_message import ErrorMessage
from app.tui.widgets.conversation.history import entry_records
from app.tui.widgets.conversation.live_compaction import LiveCompaction
from app.tui.widgets.conversation.notice_message import NoticeMessage
from app.tui.widgets.conversation.thinking_block import ThinkingBlock
from app.tui.widgets.conversation.tool_block import ToolBlock, ToolRecord
from app.tui.widgets.conversation.user_message import UserMessage

if TYPE_CHECKING:
    from app.tui.widgets.conversation.assistant_message import AssistantMessage

TEXT_FLUSH_S = 0.1   # how often gathered answer text is appended to the answer (rendered again)


def new_answer(markdown: str | None = None) -> "AssistantMessage":
    """An answer widget. Rich's Markdown and what it loads (markdown_it, Pygments: about 50 ms)
    are imported with the first answer, not before the first paint."""
    from app.tui.widgets.conversation.assistant_message import AssistantMessage  # noqa: PLC0415
    return AssistantMessage(markdown)


class Conversation(VerticalScroll):
    """The scrolling conversation. Methods are called by the app for each loop event.

    Only the latest `live_limit` messages (and about `widget_limit` widgets) stay mounted; older
    ones are kept as records (`archived`, oldest first) behind an `EarlierMessages` line, which
    builds them again a page at a time. See the module docstring."""

    DEFAULT_CSS = """
    Conversation { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None, live_limit: int = 40,
                 page: int = 20, widget_limit: int = 300, min_live: int = 12) -> None:
        super().__init__(id=id, classes=classes)
        self._current_md: AssistantMessage | None = None   # the latest answer
        self._live_md: AssistantMessage | None = None      # the answer being written, if any
        self._pending_text: list[str] = []   # deltas not yet written to the stream (flushed per frame)
        self._flush_scheduled = False
        self._thinking: ThinkingBlock | None = None
        self._tools: dict[str, ToolBlock] = {}      # mounted blocks by call id
        self._open: dict[str, ToolRecord] = {}      # calls without a result yet, mounted or paged out
        self._live_compaction: LiveCompaction | None = None
        self.live_limit = live_limit
        self.page = page
        self.widget_limit = widget_limit
        self.min_live = min(min_live, live_limit)
        self.archived = Archive()          # paged-out messages as records (compressed), oldest first
        self._earlier: EarlierMessages | None = None

    def on_mount(self) -> None:
        self.anchor()

    @property
    def streaming(self) -> bool:
        return self._live_md is not None

    @property
    def messages(self) -> list[Widget]:
        """The mounted message widgets (without the paging line)."""
        return [w for w in self.children if w is not self._earlier]

    async def _add(self, *widgets: Widget) -> None:
        await self.mount_all(widgets)
        for w in widgets:
            if isinstance(w, ToolBlock):
                self._tools[w.call_id] = w
        await self._trim()

    @staticmethod
    def _weight(w: Widget) -> int:
        """The widgets a message is (a tool block: itself, its title and, once expanded, its body)."""
        return 1 + sum(1 for _ in w.walk_children())

    def _page_out_count(self, live: list[Widget]) -> int:
        """How many of the oldest messages to page out now: none until there are a page more than
        `live_limit`, or more than `widget_limit` widgets; then down to `live_limit` messages and
        three quarters of `widget_limit` widgets (never fewer than `min_live` messages), so paging
        happens a batch at a time, not on every append."""
        n = len(live)
        if n <= self.min_live:
            return 0
        weights = [self._weight(w) for w in live]
        total = sum(weights)
        if n <= self.live_limit + self.page and total <= self.widget_limit:
            return 0
        cut, low = 0, self.widget_limit * 3 // 4
        while n - cut > self.min_live and (n - cut > self.live_limit or total > low):
            total -= weights[cut]
            cut += 1
        busy = {self._live_md, self._thinking, self._live_compaction}
        for i, w in enumerate(live[:cut]):    # never page out what is still being written to
            if w in busy:
                return i
        return cut

    async def _trim(self) -> None:
        """Page out the oldest messages as records, but only while following the bottom: never
        pull content from under someone reading it."""
        if not self._following():
            return
        live = self.messages
        cut = self._page_out_count(live)
        if not cut:
            return
        old = live[:cut]
        self.archived.extend((w.record() for w in old), open_records=self._open.values())
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

    def _build(self, records: list) -> list[Widget]:
        widgets = [new_answer(r.text) if isinstance(r, AssistantRecord) else r.build() for r in records]
        for w in widgets:
            if isinstance(w, ToolBlock):
                self._tools[w.call_id] = w
        return widgets

    async def show_earlier(self) -> int:
        """Build the last page of paged-out messages and mount them above the others. Returns how many."""
        if not self.archived:
            return 0
        batch = self._build(self.archived[-self.page:])
        del self.archived[-self.page:]
        if self._earlier is not None:
            await self.mount_all(batch, after=self._earlier)
        else:
            await self.mount_all(batch, before=0)
        await self._update_earlier()
        return len(batch)

    async def on_earlier_messages_show(self, event: EarlierMessages.Show) -> None:
        event.stop()
        await self.show_earlier()

    def walk_records(self) -> Iterator:
        """Every message as a record, oldest first: the paged-out ones, then the mounted ones."""
        yield from self.archived
        for w in self.messages:
            yield w.record()

    @property
    def current_markdown(self) -> AssistantMessage | None:
        return self._current_md

    # -- streaming text ---------------------------------------------------------------------------
    async def append_text(self, text: str) -> None:
        """A delta of the answer: gathered, and appended at most every `TEXT_FLUSH_S`."""
        if self._live_md is None:
            self._end_thinking()
            md = new_answer()
            self._current_md = self._live_md = md
            await self._add(md)
        self._pending_text.append(text)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.set_timer(TEXT_FLUSH_S, self._flush_text, name="flush text")

    async def _flush_text(self) -> None:
        self._flush_scheduled = False
        if self._live_md is not None and self._pending_text:
            text = "".join(self._pending_text)
            self._pending_text.clear()
            self._live_md.append(visible(text))

    async def end_text(self) -> None:
        """Finish the current assistant block (what is still gathered is appended)."""
        if self._live_md is not None:
            await self._flush_text()
            self._live_md = None
        self._pending_text.clear()
        self._end_thinking()

    def _end_thinking(self) -> None:
        if self._thinking is not None:
            self._thinking.finish()
            self._thinking = None

    async def append_thinking(self, text: str) -> None:
        if self._live_md is not None:
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
        self._open[call_id] = block.data
        await self._add(block)
        return block

    def set_tool_result(self, call_id: str, preview: str, size: int, is_error: bool) -> None:
        """A call's result: shown on its block, or kept in its record when the block is paged out."""
        record = self._open.pop(call_id, None)
        block = self._tools.get(call_id)
        if block is not None:
            block.set_result(preview, size, is_error)
        elif record is not None:
            record.set_result(preview, size, is_error)

    def cancel_running_tools(self) -> int:
        """Mark every call still without a result cancelled (⊘), mounted or paged out. Returns how many."""
        n = 0
        for call_id, record in list(self._open.items()):
            block = self._tools.get(call_id)
            if block is not None:
                block.set_cancelled()
            else:
                record.set_cancelled()
            n += 1
        self._open.clear()
        return n

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
        self._current_md = None
        self._tools.clear()
        self._open.clear()
        self._live_compaction = None
        self.archived.clear()
        self._earlier = None
        await self.remove_children()
        self.anchor()

    # -- resume -----------------------------------------------------------------------------------
    async def load_entries(self, entries: Iterable[Entry]) -> int:
        """Rebuild the view from a history (resume): records for every message, widgets for the
        latest `live_limit` (the rest paged out). Returns the number of messages."""
        records: list = []
        pending: dict[str, ToolRecord] = {}
        for e in entries:
            records.extend(entry_records(e, pending))
        self._open.update({k: r for k, r in pending.items() if r.result is None})
        cut = max(0, len(records) - self.live_limit)
        self.archived.extend(records[:cut], open_records=self._open.values())
        live = self._build(records[cut:])
        if live:
            await self.mount_all(live)
        await self._update_earlier()
        self.anchor()
        return len(records)
