"""The multi-line prompt: Enter sends, Shift+Enter or Ctrl+J inserts a newline, Up/Down walk the
history (at the first/last line, so moving inside a multi-line draft still works), Tab completes
slash commands. Esc is not handled here: it bubbles to the app, which cancels the running turn.

Typing `@` opens the file picker (mention_picker.py) when the screen has one: what follows the `@`
filters it, Up/Down move, Enter or Tab insert the chosen path as `@path`, Esc closes it and
keeps the text (and is not passed on, so it cancels nothing)."""
from __future__ import annotations

from textual import events
from textual.content import Content
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import TextArea
from textual.widgets.text_area import Document

from agent_core.mentions.mention_text import mention_at, quote

from app.tui import commands
from app.tui.widgets.mention_picker import MentionPicker

NEWLINE_KEYS = frozenset({"shift+enter", "ctrl+j"})
# Fits the prompt beside the sidebar at 120 columns (Esc and the rest are in the footer).
PLACEHOLDER = "Ask the agent…  Enter sends · Ctrl+J new line · / commands"


class PromptHistory:
    """Sent prompts, newest last, with a cursor; the draft being typed is kept while browsing."""

    def __init__(self, items: list[str] | None = None, limit: int = 500) -> None:
        self.items: list[str] = list(items or [])
        self.limit = limit
        self.index: int | None = None   # None = editing the draft
        self.draft = ""

    def add(self, text: str) -> None:
        if text and (not self.items or self.items[-1] != text):
            self.items.append(text)
            del self.items[:-self.limit]
        self.index = None

    def previous(self, current: str) -> str | None:
        if not self.items:
            return None
        if self.index is None:
            self.draft = current
            self.index = len(self.items) - 1
        elif self.index > 0:
            self.index -= 1
        else:
            return None
        return self.items[self.index]

    def next(self) -> str | None:
        if self.index is None:
            return None
        if self.index < len(self.items) - 1:
            self.index += 1
            return self.items[self.index]
        self.index = None
        return self.draft


class PromptInput(TextArea):
    """See module docstring."""

    class Submitted(Message):
        def __init__(self, prompt: "PromptInput", text: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.text = text

        @property
        def control(self) -> "PromptInput":
            return self.prompt

    def __init__(self, *, id: str | None = None, history: list[str] | None = None) -> None:
        super().__init__("", id=id, soft_wrap=True, tab_behavior="focus", show_line_numbers=False,
                         highlight_cursor_line=False,
                         placeholder=PLACEHOLDER)
        self.prompt_history = PromptHistory(history)
        self._picker: MentionPicker | None = None
        self._dismissed_at: int | None = None    # the `@` whose picker Esc closed: not reopened for it

    def fill(self, text: str) -> None:
        """Put `text` in the prompt to edit or send (a rewound prompt, a palette command that needs
        an argument), the cursor at its end, and take the focus."""
        self.load_text(text)
        self.move_cursor(self.document.end)
        self.focus()

    def _set_text(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)
        ended = mention_at(text, len(text))    # a prompt from the history ending in `@x`: no picker for it
        self._dismissed_at = ended[0] if ended else None

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if self._picker_keys(event):
            return
        if key == "enter":
            self._stop(event)
            text = self.text
            if text.strip():
                self.prompt_history.add(text)
                self._set_text("")
                self.post_message(self.Submitted(self, text))
            return
        if key in NEWLINE_KEYS:
            self._stop(event)
            start, end = self.selection
            self._replace_via_keyboard("\n", start, end)
            return
        if key == "tab":
            done = self.complete()
            if done:
                self._stop(event)
                return
        if key == "up" and self.cursor_at_first_line:
            earlier = self.prompt_history.previous(self.text)
            if earlier is not None:
                self._stop(event)
                self._set_text(earlier)
                return
        if key == "down" and self.cursor_at_last_line and self.prompt_history.index is not None:
            later = self.prompt_history.next()
            if later is not None:
                self._stop(event)
                self._set_text(later)
                return
        await super()._on_key(event)

    @staticmethod
    def _stop(event: events.Key) -> None:
        event.stop()
        event.prevent_default()

    def complete(self) -> bool:
        """Complete a slash command: to the single match, or to the longest common prefix."""
        matches = commands.complete(self.text)
        if not matches:
            return False
        if len(matches) == 1:
            new = matches[0]
        else:
            new = _common_prefix(matches)
        if new == self.text:
            return len(matches) > 1   # several: keep focus here; the hint lists them
        self._set_text(new)
        return True

    def _on_text_area_changed(self, event: TextArea.Changed) -> None:
        self.border_subtitle = Content(commands.hint(self.text))
        self._follow_mention()

    def _on_text_area_selection_changed(self, event: TextArea.SelectionChanged) -> None:
        self._follow_mention()

    # ----- @-mentions ------------------------------------------------------------------------
    def _plain_document(self) -> Document:
        """The prompt's text as a Document, which maps an index in the text to a location (every
        TextArea document is one; Textual types it as the base class)."""
        document = self.document
        if not isinstance(document, Document):
            raise TypeError(f"the prompt's document is a {type(document).__name__}")
        return document

    @property
    def mention_picker(self) -> MentionPicker | None:
        """The screen's file picker (found once), or None when it has none (no @-mentions)."""
        if self._picker is None or not self._picker.is_attached:
            try:
                self._picker = self.screen.query_one(MentionPicker)
            except NoMatches:
                self._picker = None
        return self._picker

    def _typed_mention(self) -> tuple[int, str] | None:
        """(index of the `@`, what follows it) when the cursor is in a mention being typed."""
        start, end = self.selection
        if start != end:
            return None
        return mention_at(self.text, self._plain_document().get_index_from_location(end))

    def _follow_mention(self) -> None:
        """Open, filter or close the picker as the cursor enters, edits or leaves an `@word`."""
        picker = self.mention_picker
        if picker is None:
            return
        typed = self._typed_mention()
        if typed is None or typed[0] == self._dismissed_at:
            if typed is None:
                self._dismissed_at = None
            picker.close()
            return
        self._dismissed_at = None
        picker.open(typed[1])

    def _picker_keys(self, event: events.Key) -> bool:
        """The keys the open picker takes; True when the key was one of them."""
        picker = self.mention_picker
        if picker is None or not picker.is_open:
            return False
        key = event.key
        if key in ("up", "down"):
            picker.move(-1 if key == "up" else 1)
        elif key == "escape":
            typed = self._typed_mention()
            self._dismissed_at = typed[0] if typed else None
            picker.close()
        elif key in ("enter", "tab"):
            path = picker.chosen()
            if path is None and key == "enter":
                picker.close()
                return False        # nothing to choose: Enter sends
            if path is not None:
                self.insert_mention(path)
            picker.close()
        else:
            return False
        self._stop(event)
        return True

    def insert_mention(self, path: str) -> None:
        """Replace the `@word` being typed with `path` as a mention, and a blank after it."""
        typed = self._typed_mention()
        if typed is None:
            return
        at, query = typed
        document = self._plain_document()
        start = document.get_location_from_index(at)
        end = document.get_location_from_index(at + 1 + len(query))
        done = self.replace(quote(path) + " ", start, end)
        self.move_cursor(done.end_location)


def _common_prefix(items: list[str]) -> str:
    first, last = min(items), max(items)
    i = 0
    while i < min(len(first), len(last)) and first[i] == last[i]:
        i += 1
    return first[:i]
