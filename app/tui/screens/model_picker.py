"""The /model picker: the known models with their window and prices per million tokens, the
current one marked, and what switching costs (agent_core/providers/model_choices.py). Choosing one
returns its id; the app then does what `/model NAME` does. It fits 80 columns."""
from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agent_core.providers.model_choices import ModelChoice
from agent_core.security.visible_text import one_line

from app import format as fmt

NAME_W = 27
COLUMNS = ("input", "output", "write", "read")
KEYS = ("input", "output", "cache_write", "cache_read")
EXTRA_ROWS = 9     # the border (2), the heading, a blank line, the cost (up to 4 lines) and the keys
HEAD = "  " + "model".ljust(NAME_W) + "window".rjust(8) + "".join(c.rjust(8) for c in COLUMNS)


def per_million(v: float) -> str:
    """$3.00, $0.125: cents, or a tenth of a cent where cents would round a price away."""
    cents = round(v, 2)
    return f"{v:.2f}" if abs(cents - v) < 1e-9 or v >= 1 else f"{v:.3f}"


def window_text(c: ModelChoice) -> str:
    w = fmt.short_tokens(c.window).replace(".0", "")
    return f"{w}/1M" if c.window_note == "1M opt-in" else w


def row(c: ModelChoice, current: str) -> Content:
    mark = "● " if c.model == current else "  "
    name = one_line(c.model)
    name = name if len(name) <= NAME_W - 1 else name[:NAME_W - 2] + "…"
    prices = ("".join(per_million(c.per_million[k]).rjust(8) for k in KEYS) if c.per_million is not None
              else "not known".rjust(32))
    return Content.assemble((mark, "bold $accent"), (name.ljust(NAME_W), "bold" if mark.strip() else ""),
                            window_text(c).rjust(8), prices)


def switch_text(c: ModelChoice, current: str, tokens: int, ttl: str, head: int | None = None) -> str:
    """What choosing `c` costs. The switch starts a new session, so its first request, uncached for
    the new model (a model's prompt cache is its own), writes the head (system prompt and tools);
    this conversation's `tokens` stay in this session, for /resume."""
    name = one_line(c.model)
    if c.model == current:
        return f"{name} is the model now: choosing it starts a new session on it."
    head = tokens if head is None else head
    cost = c.switch_cost(head)
    price = ("its price is not known" if cost is None or c.per_million is None else
             f"about {fmt.usd(cost)} at ${per_million(c.per_million['cache_write'])}/M ({ttl} cache write)")
    text = (f"Switch cost: a new session, whose first request is uncached for {name}: it writes the system "
            f"prompt and tools, {fmt.tokens(head)} tokens, {price}. This conversation ({fmt.tokens(tokens)} "
            f"tokens) stays in this session.")
    if c.priced_as:
        text += f" The demo runs offline; its dollars are {c.priced_as}'s, for illustration."
    return text


class ModelPicker(ModalScreen[str | None]):
    """/model: pick a model; returns its id, or None when closed."""

    BINDINGS = [Binding("escape,q", "close", "Close", id="model.close")]

    def __init__(self, choices: list[ModelChoice], current: str, tokens: int, ttl: str,
                 head: int | None = None) -> None:
        super().__init__()
        self.choices = choices
        self.current = current
        self.tokens = tokens
        self.ttl = ttl
        self.head = head

    def compose(self) -> ComposeResult:
        with Vertical(id="model-dialog"):
            yield Static(Content.styled(HEAD, "bold $text-muted"), id="model-head")
            yield OptionList(*[Option(row(c, self.current), id=c.model) for c in self.choices], id="model-list")
            yield Static(id="model-cost")
            yield Static(Content.styled("Enter switches (a new session; /resume brings this one back) · "
                                        "Esc closes", "$text-muted"), id="model-keys")

    def on_mount(self) -> None:
        dialog = self.query_one("#model-dialog")
        dialog.border_title = "Switch the model"
        dialog.border_subtitle = "$ per million tokens"
        options = self.query_one("#model-list", OptionList)
        here = next((i for i, c in enumerate(self.choices) if c.model == self.current), 0)
        options.highlighted = here
        options.focus()
        self._show_cost(here)

    def on_resize(self) -> None:
        """The list takes what the heading, the cost lines and the border leave (CSS has no calc), so
        the switch's cost stays on screen at 24 rows."""
        self.query_one("#model-list").styles.max_height = max(3, self.size.height - EXTRA_ROWS)

    @on(OptionList.OptionHighlighted)
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._show_cost(event.option_index)

    def _show_cost(self, index: int) -> None:
        if 0 <= index < len(self.choices):
            text = switch_text(self.choices[index], self.current, self.tokens, self.ttl, self.head)
            self.query_one("#model-cost", Static).update(Content(text))

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_close(self) -> None:
        self.dismiss(None)
