"""The conversation: user prompts, streamed assistant text, thinking, tool calls, compaction markers,
errors, one record module each beside this one. It only renders what the loop reports; it never
decides anything.

It is one line-API widget, not a widget per message. Textual arranges every mounted widget of the
screen whenever one is added or changes size, so a conversation of widgets made each appended
block cost more the longer the session (and a turn mounted a dozen). Here each message is a small
record (its text, a tool call's name, input and result, ...) that draws itself into strips once
per width (`draw.py`); the widget keeps those lines and their offsets, and the screen asks it for
the rows it shows. Appending a block draws that block and moves the scroll range: no layout, no
widget, whatever the session holds.

Everything here is someone else's text (the model's, a tool's, a file name, a resumed log's), so
every piece passes through `agent_core.security.visible_text` on its way in: an escape sequence
reads `␛[2K` instead of erasing a line, and it is drawn as a Rich `Text` (never parsed as markup),
so `[bold]` or `[@click=…]` in a file name is shown as written.

The deltas of one model call come in bursts: they are gathered and drawn at most every
`TEXT_FLUSH_S` (a tenth of a second, faster than anyone reads: gathered_text.py). The view follows the bottom
(`anchor`) until the user scrolls up, and picks it up again when they scroll back down.

Drawn lines cost memory and a resize draws every block shown again, so only the latest
`live_limit` messages are kept drawn; older ones are paged out as compressed records (archive.py)
behind an "earlier messages" line that brings them back a page at a time. The records' lines, their
offsets and the paging are `RecordLines` (record_lines.py); this widget scrolls, draws the rows the
screen asks for, and takes the keys and the mouse.

Keys, when the conversation has focus: ↑/↓ move a cursor from block to block, Enter (or a click)
opens or closes a tool call, thinking or summary, opens the inspector on a compaction marker, or
shows earlier messages; PgUp/PgDn/Home/End scroll."""
from __future__ import annotations

from bisect import bisect_right
from typing import Any, Iterable, Iterator, TypeVar

from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget

from agent_core import events as ev
from compaction.entry import Entry

from app.tui.widgets.conversation.answer_record import AssistantRecord
from app.tui.widgets.conversation.archive import Archive
from app.tui.widgets.conversation.compaction_marker import MarkerRecord
from app.tui.widgets.conversation.draw import Look
from app.tui.widgets.conversation.error_message import ErrorRecord
from app.tui.widgets.conversation.gathered_text import GatheredText
from app.tui.widgets.conversation.history import entry_records
from app.tui.widgets.conversation.live_compaction import LiveCompactionRecord
from app.tui.widgets.conversation.mention_chip import MentionRecord
from app.tui.widgets.conversation.notice_message import NoticeRecord
from app.tui.widgets.conversation.record_lines import EarlierRecord, RecordLines
from app.tui.widgets.conversation.shell_block import ShellRecord
from app.tui.widgets.conversation.thinking_block import ThinkingRecord
from app.tui.widgets.conversation.tool_block import ToolRecord
from app.tui.widgets.conversation.user_message import UserRecord

R = TypeVar("R")

# the stylesheet's names for what the records draw (styles/conversation.tcss)
PARTS = ("user", "user-bar", "notice", "muted", "tool-running", "tool-ok", "tool-error", "tool-result",
         "summary", "marker", "error", "error-bar", "live", "live-running", "live-error", "cursor", "hover")


def _over(strip: Strip, style: Style) -> Strip:
    """`strip` with `style` laid over every segment (the cursor's or the selection's background)."""
    return Strip([seg._replace(style=(seg.style or Style()) + style) for seg in strip], strip.cell_length)


def _clickable(record: Any) -> bool:
    """Whether a click on the record does something (see `Conversation.activate`)."""
    return isinstance(record, (EarlierRecord, MarkerRecord)) or hasattr(record, "expanded")


class Conversation(ScrollView, can_focus=True):
    """The scrolling conversation. Methods are called by the app for each loop event.

    `messages` are the records drawn (oldest first); older ones are in `archived`; `drawn` holds
    them as lines (record_lines.py). See the module docstring."""

    COMPONENT_CLASSES = {f"conversation--{name}" for name in PARTS}

    DEFAULT_CSS = """
    Conversation { height: 1fr; overflow-y: scroll; overflow-x: hidden; }
    """

    BINDINGS = [
        Binding("up", "cursor(-1)", "Previous block", show=False),
        Binding("down", "cursor(1)", "Next block", show=False),
        Binding("enter,space", "activate", "Open / close", show=False),
    ]

    class MarkerSelected(Message):
        """A compaction marker was chosen: the app opens the inspector on it."""

        def __init__(self, marker: MarkerRecord) -> None:
            self.marker = marker
            super().__init__()

    def __init__(self, *, id: str | None = None, classes: str | None = None, live_limit: int = 60,
                 page: int = 20) -> None:
        super().__init__(id=id, classes=classes)
        self.drawn = RecordLines(self._draw, live_limit=live_limit, page=page)   # the records, as lines
        self._width = 0
        self._look: Look | None = None
        self.cursor: int | None = None     # the block under the cursor (an index into `lines.records`)
        self._hover: int | None = None     # the clickable block under the mouse
        self._live_md: AssistantRecord | None = None      # the answer being written, if any
        self._current_md: AssistantRecord | None = None   # the latest answer
        self._thinking: ThinkingRecord | None = None
        self._live_compaction: LiveCompactionRecord | None = None
        self._gathered = GatheredText(self, self._changed)   # streamed deltas, drawn every TEXT_FLUSH_S
        self._ticker: Timer | None = None
        self._open: dict[str, ToolRecord] = {}      # calls without a result yet, drawn or paged out

    def on_mount(self) -> None:
        self.anchor()

    # ----- what the app and the tests read --------------------------------------------------------
    @property
    def archived(self) -> Archive:
        """The paged-out messages as records (compressed), oldest first."""
        return self.drawn.archived

    @property
    def live_limit(self) -> int:
        """How many messages are kept drawn (older ones are paged out)."""
        return self.drawn.live_limit

    @live_limit.setter
    def live_limit(self, n: int) -> None:
        self.drawn.live_limit = n

    @property
    def page(self) -> int:
        """How many messages are paged out, or back, at a time."""
        return self.drawn.page

    @page.setter
    def page(self, n: int) -> None:
        self.drawn.page = n

    @property
    def messages(self) -> list[Any]:
        """The records drawn, oldest first (without the earlier-messages line)."""
        return self.drawn.messages

    def records_of(self, kind: type[R]) -> list[R]:
        """The drawn records of one kind."""
        return [r for r in self.drawn.records if isinstance(r, kind)]

    def walk_records(self) -> Iterator:
        """Every message as a record, oldest first: the paged-out ones, then the drawn ones."""
        yield from self.archived
        yield from self.messages

    def holds(self, record: Any) -> bool:
        """Whether `record` is drawn now (not paged out, not cleared)."""
        return self.drawn.index(record) is not None

    @property
    def streaming(self) -> bool:
        return self._live_md is not None

    @property
    def current_markdown(self) -> AssistantRecord | None:
        return self._current_md

    @property
    def live_compaction(self) -> LiveCompactionRecord | None:
        """The summary being written, if one is."""
        return self._live_compaction

    def text_of(self, record: Any) -> str:
        """What a drawn record shows, as plain text (for tests and for copying)."""
        i = self.drawn.index(record)
        lines = self.drawn.lines[i] if i is not None else self._draw(record)
        return "\n".join(s.text.rstrip() for s in lines)

    # ----- drawing ------------------------------------------------------------------------------------
    def _make_look(self) -> Look:
        theme = self.app.current_theme
        styles = {name: self.get_component_rich_style(f"conversation--{name}") for name in PARTS}
        return Look(self.app.console, styles, theme.dark, dict(self.app.theme_variables), self.rich_style)

    def _draw(self, record: Any) -> list[Strip]:
        """A record's lines at the view's width (none before the first resize, which draws all)."""
        if self._width <= 0:
            return []
        if self._look is None:
            self._look = self._make_look()
        return record.draw(self._look, self._width)

    def _content_width(self) -> int:
        return self.scrollable_content_region.width

    def notify_style_update(self) -> None:
        """A theme or stylesheet change: draw again with the new colours, if they changed."""
        super().notify_style_update()
        if self.is_attached and self._look is not None:
            look = self._make_look()
            if (look.styles, look.dark, look.base) != (self._look.styles, self._look.dark, self._look.base):
                self._look = look
                self._redraw_all()

    def on_resize(self, event: events.Resize) -> None:
        width = self._content_width()
        if width != self._width:
            self._width = width
            self._redraw_all()

    def _redraw_all(self) -> None:
        if self._width <= 0:
            return
        self.drawn.redraw_all()
        self._sized()
        self.refresh()

    def _sized(self) -> None:
        """The scroll range follows the lines held, and the view the bottom while anchored.

        `virtual_size` is a layout reactive: setting it plainly arranges the whole screen again,
        for every appended block. The conversation's own size never changes with its content, so
        the range is set without a layout and the scrollbars are told directly, as Textual does
        itself when it sizes a widget without one (`Widget._size_updated(layout=False)`)."""
        size = Size(self._width, self.drawn.height)
        if size != self.virtual_size:
            self.set_reactive(Widget.virtual_size, size)
            self._scroll_update(size)
        if self._following():
            self.scroll_y = self.max_scroll_y
            self.scroll_target_y = self.scroll_y

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        # ScrollView's watcher leaves out the anchor check Widget's has: scrolling back to the
        # bottom must pick up following again.
        super().watch_scroll_y(old_value, new_value)
        if self.is_anchored and getattr(self, "_anchor_released", False):
            self._check_anchor()

    def _following(self) -> bool:
        # Textual marks an anchored view "released" when the user scrolls away from the bottom
        # and clears that when they come back (Widget._check_anchor); there is no public getter.
        return self.is_anchored and not getattr(self, "_anchor_released", False)

    def _append(self, record: Any) -> None:
        top, count = self.drawn.append(record)
        self._sized()
        self.refresh_lines(top, count)
        self._trim()

    def _changed(self, record: Any) -> None:
        """A drawn record changed: its lines again, and those below moved if its height did."""
        i = self.drawn.index(record)
        if i is None or self._width <= 0:
            return
        top, count, moved = self.drawn.redraw(i)
        if moved:
            self._sized()
        self.refresh_lines(top, count)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        line = scroll_y + y
        width = self.scrollable_content_region.width
        i = self.drawn.at(line)
        if i is None:
            return Strip.blank(width, self.rich_style)
        lines = self.drawn.lines[i]
        k = line - self.drawn.tops[i] - self.drawn.gaps[i]
        if not 0 <= k < len(lines):
            return Strip.blank(width, self.rich_style).apply_offsets(scroll_x, line)
        strip = lines[k]
        if i == self.cursor and self.has_focus:
            strip = _over(strip, self._cursor_style())
        elif i == self._hover:
            strip = _over(strip, self._cursor_style("hover"))
        selection = self.text_selection
        if selection is not None and (span := selection.get_span(line)) is not None:
            start, end = span
            end = strip.cell_length if end == -1 else min(end, strip.cell_length)
            if start < end:
                head, middle, tail = strip.divide([start, end, strip.cell_length])
                selected = _over(middle, self.screen.get_component_rich_style("screen--selection"))
                strip = Strip.join([head, selected, tail])
        if scroll_x or strip.cell_length != width:     # the lines are drawn at the view's width
            strip = strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)
        return strip.apply_offsets(scroll_x, line)

    # Textual's text selection: the offsets on each line (above) map the mouse to the text here.
    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        return selection.extract(self.drawn.text()), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    def _cursor_style(self, part: str = "cursor") -> Style:
        style = self._look.style(part) if self._look is not None else Style(reverse=True)
        return Style(bgcolor=style.bgcolor) if style.bgcolor is not None else Style(reverse=True)

    # ----- paging -------------------------------------------------------------------------------------
    def _trim(self) -> None:
        """Page out the oldest messages, only while following the bottom: never pull content from
        under someone reading it; never what is still being written to."""
        if not self._following():
            return
        writing = [r for r in (self._live_md, self._thinking, self._live_compaction) if r is not None]
        if self.drawn.page_out(writing, self._open.values()):
            self._moved()

    def show_earlier(self) -> int:
        """Draw the last page of paged-out messages above the others. Returns how many."""
        shown = self.drawn.show_earlier()
        if shown:
            self._moved()
        return shown

    def _moved(self) -> None:
        """The records' indices moved (paged out or back, loaded): the cursor and the hover go."""
        self.cursor = self._hover = None
        self._sized()
        self.refresh()

    # ----- the cursor, keys and the mouse ------------------------------------------------------------
    def action_cursor(self, step: int) -> None:
        records, lines = self.drawn.records, self.drawn.lines
        if not records:
            return
        i = (self._last_visible() if step < 0 else self._first_visible()) if self.cursor is None else self.cursor + step
        while 0 <= i < len(records) and not lines[i]:    # a block that shows something (an
            i += step                                    # answer begun shows nothing yet)
        if 0 <= i < len(records):
            self.cursor = i
        elif self.cursor is None:
            return
        self._reveal(records[self.cursor])
        self.refresh()

    def _first_visible(self) -> int:
        return max(0, bisect_right(self.drawn.tops, self.scroll_offset.y) - 1)

    def _last_visible(self) -> int:
        bottom = self.scroll_offset.y + self.scrollable_content_region.height - 1
        return max(0, min(len(self.drawn.records) - 1, bisect_right(self.drawn.tops, bottom) - 1))

    def action_activate(self) -> None:
        if self.cursor is not None and self.cursor < len(self.drawn.records):
            self.activate(self.drawn.records[self.cursor])

    def activate(self, record: Any) -> None:
        """What Enter or a click on a block does: open or close it, inspect a marker, show earlier."""
        if isinstance(record, EarlierRecord):
            self.release_anchor()     # the page asked for stays in view, and is not paged out again
            self.show_earlier()
            self.scroll_to(y=0, animate=False, immediate=True)
        elif isinstance(record, MarkerRecord):
            self.post_message(self.MarkerSelected(record))
        elif hasattr(record, "expanded"):
            record.expanded = not record.expanded
            self.release_anchor()     # the block opened stays where it is, not pushed up by the bottom
            self._changed(record)
            self._reveal(record)

    def _reveal(self, record: Any) -> None:
        """Scroll so that a record's first lines are in view."""
        d = self.drawn
        i = d.index(record)
        if i is not None:
            height = min(d.gaps[i] + len(d.lines[i]), self.scrollable_content_region.height)
            self.scroll_to_region(Region(0, d.tops[i], 1, max(1, height)), animate=False, immediate=True)

    def scroll_to_record(self, record: Any) -> None:
        """Scroll so that a drawn record is at the top of the view (the view stops following)."""
        i = self.drawn.index(record)
        if i is not None:
            self.release_anchor()
            self.scroll_to(y=self.drawn.tops[i], animate=False, immediate=True)

    def record_at(self, y: int) -> Any | None:
        """The record drawn at row `y` of the view."""
        i = self.drawn.at(self.scroll_offset.y + y)
        return None if i is None else self.drawn.records[i]

    def on_click(self, event: events.Click) -> None:
        record = self.record_at(event.y)
        if record is not None:
            self.cursor = self.drawn.index(record)
            self.activate(record)
            self.refresh()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        """A block that does something when clicked is lit while the mouse is over it."""
        record = self.record_at(event.y)
        hover = self.drawn.index(record) if record is not None and _clickable(record) else None
        if hover != self._hover:
            self._hover = hover
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hover is not None:
            self._hover = None
            self.refresh()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    # ----- streaming text ----------------------------------------------------------------------------
    async def append_text(self, text: str) -> None:
        """A delta of the answer: gathered, and drawn at most every `TEXT_FLUSH_S`."""
        if self._live_md is None:
            self._end_thinking()
            self._current_md = self._live_md = AssistantRecord(live=True)
            self._append(self._live_md)
        self._gathered.add(self._live_md, text)

    async def end_text(self) -> None:
        """Finish the current assistant block (what is still gathered is drawn)."""
        if self._gathered:
            self._gathered.flush_now()
        if self._live_md is not None:
            self._live_md.settle()
        self._live_md = None
        self._end_thinking()

    def _end_thinking(self) -> None:
        if self._thinking is not None:
            if self._gathered:
                self._gathered.flush_now()
            self._thinking = None

    async def append_thinking(self, text: str) -> None:
        if self._live_md is not None:
            await self.end_text()
        if self._thinking is None:
            self._thinking = ThinkingRecord()
            self._append(self._thinking)
        self._gathered.add(self._thinking, text)

    # ----- discrete items ----------------------------------------------------------------------------
    async def _add(self, record: R) -> R:
        await self.end_text()
        self._append(record)
        return record

    async def add_user(self, text: str) -> UserRecord:
        record = await self._add(UserRecord(text))
        # Sending a prompt means the user wants to see the answer: follow the bottom again.
        self.anchor()
        return record

    async def add_shell(self, command: str) -> ShellRecord:
        """A `!command` being run (shell mode); its output lands on the record (`set_shell`)."""
        record = await self._add(ShellRecord(command))
        self.anchor()
        return record

    def set_shell(self, record: ShellRecord, output: str | None, is_error: bool = False) -> None:
        """The command's output (drawn on its block, or kept in its record when paged out); None:
        it was cancelled."""
        if output is None:
            record.cancel()
        else:
            record.finish(output, is_error)
        self._changed(record)

    async def add_tool_call(self, call_id: str, name: str, args: dict) -> ToolRecord:
        record = ToolRecord(call_id, name, args)
        self._open[call_id] = record
        return await self._add(record)

    def set_tool_result(self, call_id: str, preview: str, size: int, is_error: bool) -> None:
        """A call's result: drawn on its block (kept in its record when the block is paged out)."""
        record = self._open.pop(call_id, None)
        if record is not None:
            record.set_result(preview, size, is_error)
            self._changed(record)

    def cancel_running_tools(self) -> int:
        """Mark every call still without a result cancelled (⊘), drawn or paged out. Returns how many."""
        n = 0
        for record in self._open.values():
            record.set_cancelled()
            self._changed(record)
            n += 1
        self._open.clear()
        return n

    async def add_compaction(self, c: ev.Compaction) -> MarkerRecord:
        return await self._add(MarkerRecord.of(c))

    async def start_compaction(self, e: ev.CompactionStarted) -> LiveCompactionRecord:
        record = await self._add(LiveCompactionRecord(e.tokens_before))
        self._live_compaction = record
        if self._ticker is None:
            self._ticker = self.set_interval(1.0, self._tick, name="compaction clock")
        return record

    def _tick(self) -> None:
        if self._live_compaction is not None:
            self._changed(self._live_compaction)

    def append_compaction(self, text: str) -> None:
        if self._live_compaction is not None:
            self._gathered.add(self._live_compaction, text)

    def end_compaction(self, e: ev.CompactionEnded) -> None:
        record, self._live_compaction = self._live_compaction, None
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        if record is not None:
            if self._gathered:
                self._gathered.flush_now()
            record.end(e.ok, e.duration_s, e.message)
            self._changed(record)

    async def add_error(self, e: ev.Error) -> ErrorRecord:
        return await self._add(ErrorRecord(e.kind, e.message, e.retryable))

    async def add_notice(self, text: str) -> NoticeRecord:
        return await self._add(NoticeRecord(text))

    async def add_mention(self, path: str, lines: int, total_lines: int) -> MentionRecord:
        """A file the prompt attached with `@path` (a one-line chip under it)."""
        return await self._add(MentionRecord(path, lines, total_lines))

    def set_notice(self, record: NoticeRecord, text: str) -> None:
        """The same notice with new words (a wait counting its seconds)."""
        record.text = text
        self._changed(record)

    async def clear(self) -> None:
        await self.end_text()
        self._current_md = None
        self._open.clear()
        self._live_compaction = None
        self.drawn.clear()
        self.cursor = self._hover = None     # the indices moved
        self._sized()
        self.refresh()
        self.anchor()

    # ----- resume -------------------------------------------------------------------------------------
    async def load_entries(self, entries: Iterable[Entry]) -> int:
        """Rebuild the view from a history (resume): records for every message, drawn for the
        latest `live_limit` (the rest paged out). Returns the number of messages."""
        records: list = []
        pending: dict[str, ToolRecord] = {}
        for e in entries:
            records.extend(entry_records(e, pending))
        self._open.update({k: r for k, r in pending.items() if r.result is None})
        self.drawn.load(records, self._open.values())
        self._moved()
        self.anchor()
        return len(records)
