"""The @-mention picker: the workspace's files, fuzzy-filtered by what follows the `@` being typed
(Textual's own matcher, `textual.fuzzy.Matcher`), shown above the prompt. The prompt drives it
(prompt.py): it opens, filters, moves and closes it, and inserts the chosen path.

The file list (agent_core/mentions/workspace_files.py: git's view of the workspace, .gitignore
honoured, capped) is built off the UI thread in a worker when the picker first opens, and again
each time it opens after that (shown from the last list meanwhile). Matching every keystroke
over up to 20,000 paths runs in a worker too, the newest query cancelling the one before. File
names are outside text: matched and shown through `one_line`, as `Content`, never markup."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from textual import work
from textual.content import Content
from textual.fuzzy import Matcher
from textual.visual import Style
from textual.widgets import OptionList
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from agent_core.mentions.workspace_files import FileList, list_files
from agent_core.security.visible_text import one_line

MATCH_STYLE = Style(bold=True, underline=True)
SHOWN = 50          # matches kept (the list scrolls; a few rows show at once)
# The matcher tries every way the query's letters can fall in a path: a path made of one letter
# repeated (a hostile name) would take for ever. Past this many ways, a plain in-order test decides.
MAX_WAYS = 5_000


def _ways(query: str, candidate: str) -> int:
    ways = 1
    for ch in query:
        ways *= candidate.count(ch)
        if ways == 0 or ways > MAX_WAYS:
            return ways
    return ways


def _matchable(low_query: str, low_name: str) -> bool:
    """Whether the matcher can score this name quickly (see MAX_WAYS)."""
    return low_query in low_name or _ways(low_query, low_name) <= MAX_WAYS


def _in_order(query: str, candidate: str) -> bool:
    at = 0
    for ch in query:
        at = candidate.find(ch, at) + 1
        if at == 0:
            return False
    return True


def rank(query: str, shown: list[str], limit: int = SHOWN,
         cancelled: Callable[[], bool] = lambda: False) -> list[tuple[int, float]]:
    """(index, score) of the best `limit` matches of `query` among the `shown` names, best first
    (ties: the shorter path, then the list's order). An empty query keeps the list's order."""
    if not query:
        return [(i, 0.0) for i in range(min(limit, len(shown)))]
    matcher = Matcher(query)
    low = query.lower()
    scored: list[tuple[float, int, int]] = []
    for i, name in enumerate(shown):
        if i % 512 == 0 and cancelled():
            return []
        lname = name.lower()
        if _matchable(low, lname):
            score = matcher.match(name)
        else:
            score = 0.5 if _in_order(low, lname) else 0.0
        if score > 0:
            scored.append((-score, len(name), i))
    scored.sort()
    return [(i, -s) for s, _, i in scored[:limit]]


def _highlighted(matcher: Matcher, name: str) -> Content:
    """`name` with the matched letters in the matcher's style. Not `Matcher.highlight`: that parses
    the name as markup, and a file may be called `[bold]x`."""
    content = Content(name)
    _, offsets = matcher.fuzzy_search.match(matcher.query, name)
    for at in offsets:
        if not name[at].isspace():
            content = content.stylize(matcher.match_style, at, at + 1)
    return content


class MentionPicker(OptionList):
    """See module docstring. Hidden until the prompt opens it."""

    DEFAULT_CSS = """
    MentionPicker {
        display: none;
        height: auto;
        max-height: 10;
        border: round $accent;
        border-title-color: $text-accent;
        border-subtitle-color: $text-muted;
        padding: 0 1;
        background: $surface;
    }
    MentionPicker.-open { display: block; }
    """

    def __init__(self, workspace: Path, *, protected: tuple[Path, ...] = (), id: str | None = None) -> None:
        super().__init__(id=id)
        self.can_focus = False       # the prompt keeps the focus and the keys
        self.workspace = workspace
        self.protected = protected
        self.files: FileList | None = None
        self.shown: list[str] = []            # the files as drawn (escaped), index for index
        self.query_text = ""
        self.matches: list[int] = []          # indices into files.paths, in the order listed
        self.border_title = "@ files"

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def open(self, query: str) -> None:
        """Show the picker filtered by `query`; the file list is (re)built in the background."""
        if not self.is_open:
            self.add_class("-open")
            self._list_files()
        self.filter(query)

    def close(self) -> None:
        self.remove_class("-open")

    def filter(self, query: str) -> None:
        self.query_text = query
        if self.files is None:
            self._show([], "listing files…")
            return
        self._rank(query, self.shown)

    def move(self, by: int) -> None:
        if self.option_count:
            current = self.highlighted if self.highlighted is not None else -1
            self.highlighted = (current + by) % self.option_count

    def chosen(self) -> str | None:
        """The highlighted file's path (as it is, not escaped), or None when nothing matches."""
        if self.files is None or self.highlighted is None or not 0 <= self.highlighted < len(self.matches):
            return None
        return self.files.paths[self.matches[self.highlighted]]

    # ----- the workers -------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="mention-files", exit_on_error=False)
    def _list_files(self) -> None:
        files = list_files(self.workspace, protected=self.protected)
        shown = [one_line(p) for p in files.paths]
        self.app.call_from_thread(self._listed, files, shown)

    def _listed(self, files: FileList, shown: list[str]) -> None:
        self.files, self.shown = files, shown
        if self.is_open:
            self._rank(self.query_text, shown)

    @work(thread=True, exclusive=True, group="mention-rank", exit_on_error=False)
    def _rank(self, query: str, shown: list[str]) -> None:
        worker = get_current_worker()
        found = rank(query, shown, cancelled=lambda: worker.is_cancelled)
        if not worker.is_cancelled:
            self.app.call_from_thread(self._ranked, query, found)

    def _ranked(self, query: str, found: list[tuple[int, float]]) -> None:
        if query != self.query_text or self.files is None:
            return      # an older query's answer
        self.matches = [i for i, _ in found]
        matcher = Matcher(query, match_style=MATCH_STYLE) if query else None
        options = []
        for i, _ in found:
            name = self.shown[i]
            if matcher is not None and _matchable(query.lower(), name.lower()):
                options.append(Option(_highlighted(matcher, name)))
            else:
                options.append(Option(Content(name)))
        total = len(self.files.paths)
        more = "+" if self.files.capped else ""
        if not found:
            note = f"no match in {total:,}{more} files"
        else:
            note = f"{len(found)}{'+' if len(found) == SHOWN else ''} of {total:,}{more} · Tab/Enter choose · Esc close"
        self._show(options, note)

    def _show(self, options: list[Option], note: str) -> None:
        self.set_options(options)
        self.border_subtitle = note
        if options:
            self.highlighted = 0
