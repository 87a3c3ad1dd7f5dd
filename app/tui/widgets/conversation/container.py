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
`TEXT_FLUSH_S` (a tenth of a second, faster than anyone reads). The view follows the bottom
(`anchor`) until the user scrolls up, and picks it up again when they scroll back down.

Drawn lines cost memory and a resize draws every block shown again, so only the latest
`live_limit` messages are kept drawn; older ones are paged out as compressed records (archive.py)
behind an "earlier messages" line that brings them back a page at a time.

Keys, when the conversation has focus: ↑/↓ move a cursor from block to block, Enter (or a click)
opens or closes a tool call, thinking or summary, opens the inspector on a compaction marker, or
shows earlier messages; PgUp/PgDn/Home/End scroll."""
from __future__ import annotations

from bisect import bisect_right
from typing import Any, Iterable, Iterator, TypeVar

from rich.style import Style
from rich.text import Text
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
from agent_core.security.visible_text import visible
from compaction.entry import Entry

from app.tui.widgets.conversation.answer_record import AssistantRecord
from app.tui.widgets.conversation.archive import Archive
from app.tui.widgets.conversation.compaction_marker import MarkerRecord
from app.tui.widgets.conversation.draw import Look, paragraph
from app.tui.widgets.conversation.error_message import ErrorRecord
from app.tui.widgets.conversation.history import entry_records
from app.tui.widgets.conversation.live_compaction import LiveCompactionRecord
from app.tui.widgets.conversation.mention_chip import MentionRecord
from app.tui.widgets.conversation.notice_message import NoticeRecord
from app.tui.widgets.conversation.shell_block import ShellRecord
from app.tui.widgets.conversation.thinking_block import ThinkingRecord
from app.tui.widgets.conversation.tool_block import ToolRecord
from app.tui.widgets.conversation.user_message import UserRecord

TEXT_FLUSH_S = 0.1   # how often gathered text (an answer, thinking, a summary) is drawn again

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


class EarlierRecord:
    """The top line while older messages are paged out: how many, and how to see them."""

    __slots__ = ("count", "page")

    def __init__(self, count: int, page: int) -> None:
        self.count, self.page = count, page

    def draw(self, look: Look, width: int) -> list[Strip]:
        text = Text(f"▲ {self.count:,} earlier messages — click or press Enter to show "
                    f"{min(self.count, self.page):,} more (the session log keeps everything: /transcripts)")
        return paragraph(look, text, width, style=look.style("notice"))


class Conversation(ScrollView, can_focus=True):
    """The scrolling conversation. Methods are called by the app for each loop event.

    `messages` are the records drawn (oldest first); older ones are in `archived`. See the module
    docstring."""

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
        self.live_limit = live_limit
        self.page = page
        self.archived = Archive()          # paged-out messages as records (compressed), oldest first
        self._items: list[Any] = []        # the records drawn, oldest first (an EarlierRecord first when any)
        self._lines: list[list[Strip]] = []   # each record's lines at `_width`
        self._tops: list[int] = []         # the first line of each record (its margin's)
        self._gaps: list[int] = []         # blank lines above each record: margins, collapsed as CSS's are
        self._height = 0
        self._width = 0
        self._look: Look | None = None
        self.cursor: int | None = None     # the block under the cursor (an index into `_items`)
        self._hover: int | None = None     # the clickable block under the mouse
        self._live_md: AssistantRecord | None = None      # the answer being written, if any
        self._current_md: AssistantRecord | None = None   # the latest answer
        self._thinking: ThinkingRecord | None = None
        self._live_compaction: LiveCompactionRecord | None = None
        self._pending: dict[int, tuple[Any, list[str]]] = {}   # gathered deltas by record
        self._flush_timer: Timer | None = None
        self._ticker: Timer | None = None
        self._open: dict[str, ToolRecord] = {}      # calls without a result yet, drawn or paged out

    def on_mount(self) -> None:
        self.anchor()

    # ----- what the app and the tests read --------------------------------------------------------
    @property
    def messages(self) -> list[Any]:
        """The records drawn, oldest first (without the earlier-messages line)."""
        return [r for r in self._items if not isinstance(r, EarlierRecord)]

    def records_of(self, kind: type[R]) -> list[R]:
        """The drawn records of one kind."""
        return [r for r in self._items if isinstance(r, kind)]

    def walk_records(self) -> Iterator:
        """Every message as a record, oldest first: the paged-out ones, then the drawn ones."""
        yield from self.archived
        yield from self.messages

    def holds(self, record: Any) -> bool:
        """Whether `record` is drawn now (not paged out, not cleared)."""
        return self._index(record) is not None

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
        i = self._index(record)
        lines = self._lines[i] if i is not None else self._draw(record)
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
        self._lines = [self._draw(r) for r in self._items]
        self._retop(0)
        self._sized()
        self.refresh()

    def _retop(self, start: int) -> None:
        """The offsets of the records from `start` on (after a record changed height)."""
        del self._tops[start:]
        del self._gaps[start:]
        top = self._tops[-1] + self._gaps[-1] + len(self._lines[start - 1]) if start else 0
        for i in range(start, len(self._items)):
            gap = self._gap(i)
            self._tops.append(top)
            self._gaps.append(gap)
            top += gap + len(self._lines[i])
        self._height = top

    def _gap(self, i: int) -> int:
        """The blank lines between record `i` and the one above: the larger of their margins."""
        top = getattr(self._items[i], "margin", (0, 0))[0]
        return max(top, getattr(self._items[i - 1], "margin", (0, 0))[1]) if i else top

    def _sized(self) -> None:
        """The scroll range follows the lines held, and the view the bottom while anchored.

        `virtual_size` is a layout reactive: setting it plainly arranges the whole screen again,
        for every appended block. The conversation's own size never changes with its content, so
        the range is set without a layout and the scrollbars are told directly, as Textual does
        itself when it sizes a widget without one (`Widget._size_updated(layout=False)`)."""
        size = Size(self._width, self._height)
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

    def _index(self, record: Any) -> int | None:
        """Where a record is drawn (looked for from the end: the records that change are recent)."""
        for i in range(len(self._items) - 1, -1, -1):
            if self._items[i] is record:
                return i
        return None

    def _append(self, record: Any) -> None:
        self._items.append(record)
        lines = self._draw(record)
        self._lines.append(lines)
        gap = self._gap(len(self._items) - 1)
        self._tops.append(self._height)
        self._gaps.append(gap)
        self._height += gap + len(lines)
        self._sized()
        self.refresh_lines(self._tops[-1], len(lines) or 1)
        self._trim()

    def _changed(self, record: Any) -> None:
        """A drawn record changed: its lines again, and those below moved if its height did."""
        i = self._index(record)
        if i is None or self._width <= 0:
            return
        old = len(self._lines[i])
        self._lines[i] = self._draw(record)
        if len(self._lines[i]) != old:
            self._retop(i + 1)
            self._sized()
            self.refresh_lines(self._tops[i], max(1, self._height - self._tops[i]))
        else:
            self.refresh_lines(self._tops[i], max(1, old))

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        line = scroll_y + y
        width = self.scrollable_content_region.width
        if not self._items or line >= self._height or line < 0:
            return Strip.blank(width, self.rich_style)
        i = bisect_right(self._tops, line) - 1
        lines = self._lines[i]
        k = line - self._tops[i] - self._gaps[i]
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
        rows: list[str] = []
        for gap, lines in zip(self._gaps, self._lines):
            rows += [""] * gap
            rows += [s.text.rstrip() for s in lines]
        text = "\n".join(rows)
        return selection.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    def _cursor_style(self, part: str = "cursor") -> Style:
        style = self._look.style(part) if self._look is not None else Style(reverse=True)
        return Style(bgcolor=style.bgcolor) if style.bgcolor is not None else Style(reverse=True)

    # ----- paging -------------------------------------------------------------------------------------
    def _trim(self) -> None:
        """Page out the oldest messages as records, a page at a time and only while following the
        bottom: never pull content from under someone reading it."""
        live = self.messages
        if len(live) <= self.live_limit + self.page or not self._following():
            return
        cut = len(live) - self.live_limit
        busy = {id(r) for r in (self._live_md, self._thinking, self._live_compaction) if r is not None}
        for n, r in enumerate(live[:cut]):       # never page out what is still being written to
            if id(r) in busy:
                cut = n
                break
        if not cut:
            return
        self.archived.extend(live[:cut], open_records=self._open.values())
        start = 1 if self._items and isinstance(self._items[0], EarlierRecord) else 0
        del self._items[start:start + cut]
        del self._lines[start:start + cut]
        self.cursor = self._hover = None     # the indices moved
        self._show_earlier_line()

    def _show_earlier_line(self) -> None:
        has_line = bool(self._items) and isinstance(self._items[0], EarlierRecord)
        if self.archived:
            if has_line:
                self._items[0].count = len(self.archived)
                self._lines[0] = self._draw(self._items[0])
            else:
                line = EarlierRecord(len(self.archived), self.page)
                self._items.insert(0, line)
                self._lines.insert(0, self._draw(line))
        elif has_line:
            del self._items[0]
            del self._lines[0]
        self._retop(0)
        self._sized()
        self.refresh()

    def show_earlier(self) -> int:
        """Draw the last page of paged-out messages above the others. Returns how many."""
        if not self.archived:
            return 0
        batch = self.archived[-self.page:]
        del self.archived[-self.page:]
        start = 1 if self._items and isinstance(self._items[0], EarlierRecord) else 0
        self._items[start:start] = batch
        self._lines[start:start] = [self._draw(r) for r in batch]
        self.cursor = self._hover = None     # the indices moved
        self._show_earlier_line()
        return len(batch)

    # ----- the cursor, keys and the mouse ------------------------------------------------------------
    def action_cursor(self, step: int) -> None:
        if not self._items:
            return
        i = (self._last_visible() if step < 0 else self._first_visible()) if self.cursor is None else self.cursor + step
        while 0 <= i < len(self._items) and not self._lines[i]:    # a block that shows something (an
            i += step                                              # answer begun shows nothing yet)
        if 0 <= i < len(self._items):
            self.cursor = i
        elif self.cursor is None:
            return
        self._reveal(self._items[self.cursor])
        self.refresh()

    def _first_visible(self) -> int:
        return max(0, bisect_right(self._tops, self.scroll_offset.y) - 1)

    def _last_visible(self) -> int:
        bottom = self.scroll_offset.y + self.scrollable_content_region.height - 1
        return max(0, min(len(self._items) - 1, bisect_right(self._tops, bottom) - 1))

    def action_activate(self) -> None:
        if self.cursor is not None and self.cursor < len(self._items):
            self.activate(self._items[self.cursor])

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
        i = self._index(record)
        if i is not None:
            height = min(self._gaps[i] + len(self._lines[i]), self.scrollable_content_region.height)
            self.scroll_to_region(Region(0, self._tops[i], 1, max(1, height)), animate=False, immediate=True)

    def scroll_to_record(self, record: Any) -> None:
        """Scroll so that a drawn record is at the top of the view (the view stops following)."""
        i = self._index(record)
        if i is not None:
            self.release_anchor()
            self.scroll_to(y=self._tops[i], animate=False, immediate=True)

    def record_at(self, y: int) -> Any | None:
        """The record drawn at row `y` of the view."""
        line = self.scroll_offset.y + y
        if not self._items or not 0 <= line < self._height:
            return None
        return self._items[bisect_right(self._tops, line) - 1]

    def on_click(self, event: events.Click) -> None:
        record = self.record_at(event.y)
        if record is not None:
            self.cursor = self._index(record)
            self.activate(record)
            self.refresh()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        """A block that does something when clicked is lit while the mouse is over it."""
        record = self.record_at(event.y)
        hover = self._index(record) if record is not None and _clickable(record) else None
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

    # ----- gathered text ------------------------------------------------------------------------------
    def _gather(self, record: Any, text: str) -> None:
        entry = self._pending.setdefault(id(record), (record, []))
        entry[1].append(text)
        if self._flush_timer is None:
            self._flush_timer = self.set_timer(TEXT_FLUSH_S, self._flush, name="flush text")

    def _flush(self) -> None:
        """Draw what was gathered (each record once, however many deltas came)."""
        self._flush_timer = None
        pending, self._pending = self._pending, {}
        for record, parts in pending.values():
            record.text += visible("".join(parts))
            self._changed(record)

    def _flush_now(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.stop()
        self._flush()

    # ----- streaming text ----------------------------------------------------------------------------
    async def append_text(self, text: str) -> None:
        """A delta of the answer: gathered, and drawn at most every `TEXT_FLUSH_S`."""
        if self._live_md is None:
            self._end_thinking()
            self._current_md = self._live_md = AssistantRecord(live=True)
            self._append(self._live_md)
        self._gather(self._live_md, text)

    async def end_text(self) -> None:
        """Finish the current assistant block (what is still gathered is drawn)."""
        if self._pending:
            self._flush_now()
        if self._live_md is not None:
            self._live_md.settle()
        self._live_md = None
        self._end_thinking()

    def _end_thinking(self) -> None:
        if self._thinking is not None:
            if self._pending:
                self._flush_now()
            self._thinking = None

    async def append_thinking(self, text: str) -> None:
        if self._live_md is not None:
            await self.end_text()
        if self._thinking is None:
            self._thinking = ThinkingRecord()
            self._append(self._thinking)
        self._gather(self._thinking, text)

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
            self._gather(self._live_compaction, text)

    def end_compaction(self, e: ev.CompactionEnded) -> None:
        record, self._live_compaction = self._live_compaction, None
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        if record is not None:
            if self._pending:
                self._flush_now()
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
        self.archived.clear()
        self._items.clear()
        self._lines.clear()
        self._tops.clear()
        self._gaps.clear()
        self._height = 0
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
        loaded = len(records)
        records = self.messages + records     # what was said before (a banner) stays first
        cut = max(0, len(records) - self.live_limit)
        self.archived.extend(records[:cut], open_records=self._open.values())
        self._items = records[cut:]
        self._lines = [self._draw(r) for r in self._items]
        self.cursor = self._hover = None     # the indices moved
        self._show_earlier_line()
        self.anchor()
        return loaded
