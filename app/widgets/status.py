"""The status line above the footer: model (and "demo — offline" when it is), session id, and
whether a turn is running. The key bindings themselves are in Textual's Footer below it."""
from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static


class StatusBar(Static):
    model: reactive[str] = reactive("")
    offline: reactive[bool] = reactive(False)
    session_id: reactive[str] = reactive("")
    busy: reactive[bool] = reactive(False)
    state: reactive[str] = reactive("ok")

    def render(self) -> Content:
        model = f"{self.model} — offline" if self.offline else self.model
        parts: list = [("model ", "dim"), (model, "bold"), ("  ·  session ", "dim"), (self.session_id or "—", "bold")]
        parts += [("  ·  context ", "dim"), (self.state, "bold")]
        if self.busy:
            parts += [("  ·  ", "dim"), ("running — Esc cancels", "bold $warning")]
        return Content.assemble(*parts)
