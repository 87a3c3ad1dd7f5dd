"""/context: the full breakdown (like Claude Code's /context) — a grid where each cell is 1% of
the window coloured by category, the categories with tokens and share of the window, the
thresholds (warning, error, auto-compact, blocking) with the current state, and the largest items
in the context (tool results, files read, messages) with their estimated tokens."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.color import Color
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from agent_core.context_items import ContextItem
from agent_core.os_sandbox.sandbox import SandboxStatus
from agent_core.events import ContextUpdate
from agent_core.security.visible_text import one_line

from app import format as fmt
from app.widgets.context_pane import STATE_VARS, STATE_WORDS, category_meta, ordered_categories
from app.widgets.context_plot import ContextPlot
from app.tui.screens.sandbox_screen import status_lines

GRID_CELLS = 100  # one cell per percent of the window
GRID_WIDTH = 10

DIALOG_WIDTH = 110   # styles/context_screen.tcss: #context-dialog's width (at most the screen's)


def grid(c: ContextUpdate) -> Content:
    """10×10 cells; each category gets cells in proportion to its tokens (largest remainder)."""
    items = [(k, v) for k, v in ordered_categories(c.categories) if v > 0]
    window = max(1, c.window)
    raw = [(k, v * GRID_CELLS / window) for k, v in items]
    cells = {k: int(x) for k, x in raw}
    spare = GRID_CELLS - sum(cells.values())
    for k, _x in sorted(raw, key=lambda kx: kx[1] - int(kx[1]), reverse=True)[:max(0, spare)]:
        cells[k] += 1
    seq: list[str] = []
    for k, _ in items:
        seq += [k] * cells[k]
    seq = (seq + ["free"] * GRID_CELLS)[:GRID_CELLS]
    parts: list = []
    for i, k in enumerate(seq):
        glyph = "□ " if k in ("free", "autocompact_buffer") else "■ "
        parts.append((glyph, category_meta(k)[2]))
        if i % GRID_WIDTH == GRID_WIDTH - 1 and i != GRID_CELLS - 1:
            parts.append("\n")
    return Content.assemble(*parts)


def _solid(variables: dict[str, str], var: str) -> str:
    """A theme variable as an opaque hex colour (translucent ones blended over the surface),
    for Rich text, which has no alpha."""
    try:
        colour = Color.parse(variables[var.lstrip("$")])
        if colour.a < 1:
            colour = Color.parse(variables["surface"]) + colour
        return colour.hex6
    except Exception:
        return ""


def threshold_state(tokens: int, level: int | None) -> str:
    """How the count stands against one level: "reached, 2,100 over" or "12,000 to go" ("—": no such
    level, as when auto-compact is off)."""
    if not level:
        return "—"
    if tokens >= level:
        return f"reached, {fmt.tokens(tokens - level)} over" if tokens > level else "reached"
    return f"{fmt.tokens(level - tokens)} to go"


class ContextScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q", "close", "Close", id="context.close")]

    def __init__(self, context: ContextUpdate | None, history: tuple = (),
                 items: tuple[ContextItem, ...] | list[ContextItem] = (), sandbox: SandboxStatus | None = None) -> None:
        super().__init__()
        self.context = context
        self.history = history
        self.items = tuple(items)
        self.sandbox = sandbox     # the OS sandbox's state, said under the figures (its own screen: /sandbox)

    def compose(self) -> ComposeResult:
        c = self.context
        with VerticalScroll(id="context-dialog"):
            if c is None:
                yield Static("No context yet: send a prompt first.")
                return
            state = c.state
            yield Static(Content.assemble(
                ("● ", STATE_VARS.get(state, "")),
                (one_line(STATE_WORDS.get(state, state)), f"bold {STATE_VARS.get(state, '')}"),
                "   ", (fmt.tokens(c.tokens), "bold"), f" / {fmt.tokens(c.window)} tokens   ",
                (fmt.percent(c.percent_left, 1), "bold"), " left until auto-compact"), id="context-headline")
            with Horizontal(id="context-body"):
                yield Static(grid(c), id="context-grid")
                yield DataTable(id="context-table", show_cursor=False)
            yield DataTable(id="context-thresholds", show_cursor=False)
            yield ContextPlot(id="context-plot")
            if self.items:
                yield Static(Content.assemble(("Largest items", "bold"),
                                              ("  (estimated tokens; what /compact or /clear would free)", "dim")),
                             id="context-items-title")
                yield DataTable(id="context-items", show_cursor=False)
            if self.sandbox is not None:
                yield Static(status_lines(self.sandbox), id="context-sandbox")

    def on_mount(self) -> None:
        self.query_one("#context-dialog").border_title = "Context window"
        c = self.context
        if c is None:
            return
        table = self.query_one("#context-table", DataTable)
        table.add_columns("category", "tokens", "of window")
        window = max(1, c.window)
        variables = self.app.get_css_variables()  # DataTable cells are Rich text: concrete colours
        categories = ordered_categories(c.categories)
        room = self._category_room([len(fmt.tokens(n)) for _k, n in categories])
        for key, n in categories:
            label, _short, colour = category_meta(key)
            square = Text("■ ", style=_solid(variables, colour))
            # a category a log named can be any length: cut it, so its tokens stay in the dialog
            name = Text(label)
            name.truncate(room, overflow="ellipsis")
            table.add_row(Text.assemble(square, name), Text(fmt.tokens(n), justify="right"),
                          Text(fmt.percent(n / window * 100, 1), justify="right"))
        thr = self.query_one("#context-thresholds", DataTable)
        thr.add_columns("level", "at tokens", "state now")
        for level, value in (("warning", c.warning), ("error", c.error), ("auto-compact", c.threshold),
                             ("blocking", c.blocking), ("window", c.window)):
            thr.add_row(level, fmt.tokens(value) if value else "—", threshold_state(c.tokens, value))
        plot = self.query_one(ContextPlot)
        plot.window, plot.threshold = c.window, c.threshold
        plot.points = tuple(self.history)
        if self.items:
            items = self.query_one("#context-items", DataTable)
            items.add_columns("kind", "item", Text("tokens", justify="right"), Text("of context", justify="right"))
            total = max(1, c.tokens)
            rows = [(Text(one_line(str(it.kind))), Text(one_line(str(it.label))),
                     Text(fmt.tokens(it.tokens), justify="right"),
                     Text(fmt.percent(it.tokens / total * 100, 1), justify="right")) for it in self.items]
            room = self._label_room([r[0].cell_len for r in rows], [r[2].cell_len for r in rows])
            for kind, item, tokens, share in rows:
                # A DataTable parses a str cell as markup; an item's label is a file name or a command.
                item.truncate(room, overflow="ellipsis")
                items.add_row(kind, item, tokens, share)

    def _label_room(self, kinds: list[int], tokens: list[int]) -> int:
        """The cells an item's label may take so its tokens and share stay in the dialog (a long
        label pushed them out of an 80-column screen): the dialog's width (at most 110) less its
        border, padding and scrollbar, the other columns and each column's padding of 2."""
        dialog = min(DIALOG_WIDTH, self.app.size.width) - 2 - 2 - 2
        others = (max(kinds + [len("kind")]) + 2) + (max(tokens + [len("tokens")]) + 2) + (len("of context") + 2)
        return max(12, dialog - others - 2)

    def _category_room(self, tokens: list[int]) -> int:
        """The cells a category's name may take beside the grid (24 cells and margins of 4, in
        styles/context_screen.tcss), its square, its tokens and its share, each column padded by 2."""
        dialog = min(DIALOG_WIDTH, self.app.size.width) - 2 - 2 - 2
        others = 28 + (max(tokens + [len("tokens")]) + 2) + (len("of window") + 2) + 2 + len("■ ")
        return max(12, dialog - others)

    def action_close(self) -> None:
        self.dismiss(None)
