"""The status line above the footer. It carries the essentials a collapsed sidebar leaves, as
Claude Code and Codex show them by the prompt: the context state, tokens against the window, what is
left until auto-compact, the session's dollars and the next request's price with the cache's time
left; then whether a turn runs, the model and the session id. Parts that do not fit the width are
dropped, least needed first; the order on screen stays the same. The key bindings themselves are in
Textual's Footer below it.

It holds no state of its own: the app sets each attribute (whether a turn runs is the app's `busy`)."""
from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from agent_core.events import ContextUpdate
from agent_core.security.visible_text import one_line
from compaction.next_request import NextRequest

from app import format as fmt
from app.widgets import next_request as next_text

STATE_WORDS = {"ok": "OK", "warning": "WARNING", "error": "ERROR", "autocompact": "AUTO-COMPACT",
               "blocking": "BLOCKING"}
STATE_STYLES = {"ok": "$success", "warning": "$warning", "error": "$error", "autocompact": "$accent",
                "blocking": "$error"}
SEP = (" · ", "dim")
# What gives way when the line is too narrow, in order: each step moves that part to its next,
# shorter form; a part's last form is None (dropped). The state and the sandbox are never dropped.
SHRINK_ORDER = ("session", "model", "sandbox", "next", "model", "running", "left", "cost", "tokens", "next",
                "running", "left")


class StatusBar(Static):
    model: reactive[str] = reactive("")
    offline: reactive[bool] = reactive(False)
    session_id: reactive[str] = reactive("")
    busy: reactive[bool] = reactive(False)              # shown as "running"; the app's state, handed down
    state: reactive[str] = reactive("ok")
    context: reactive[ContextUpdate | None] = reactive(None, always_update=True)
    cost_usd: reactive[float | None] = reactive(None)   # the session's dollars; None: unknown price
    next_request: reactive[NextRequest | None] = reactive(None)   # counted down, the typed prompt added
    sandbox: reactive[str] = reactive("")               # the OS sandbox in a few words ("" when off)

    def parts(self) -> dict[str, list[Content | None]]:
        """Every part in screen order, each as its forms from the fullest to dropped."""
        c = self.context
        state = c.state if c is not None else self.state
        style = STATE_STYLES.get(state, "$foreground")
        out: dict[str, list[Content | None]] = {
            "state": [Content.assemble(("● ", style),
                                       (one_line(STATE_WORDS.get(state, state.upper())), f"bold {style}"))]}
        if c is not None:
            used = (fmt.short_tokens(c.tokens), "bold")
            out["tokens"] = [Content.assemble(used, f" / {fmt.short_tokens(c.window)} tokens"),
                             Content.assemble(used, f"/{fmt.short_tokens(c.window)}")]
            left = (fmt.percent(c.percent_left), f"bold {style}")
            out["left"] = [Content.assemble(left, " left until auto-compact"), Content.assemble(left, " left"), None]
        dollars = (fmt.usd(self.cost_usd), "bold")
        out["cost"] = [Content.assemble(dollars, " session"), Content.assemble(dollars)]
        if self.next_request is not None:
            out["next"] = next_text.status_forms(self.next_request)
        if self.busy:
            out["running"] = [Content.assemble(("running — Esc cancels", "bold $warning")),
                              Content.assemble(("running", "bold $warning")), None]
        model = one_line(f"{self.model} — offline" if self.offline else self.model)   # a log's field in watch
        out["model"] = [Content.assemble(("model ", "dim"), (model, "bold")), Content.assemble((model, "bold")), None]
        out["session"] = [Content.assemble(("session ", "dim"), (one_line(self.session_id) or "—", "bold")), None]
        if self.sandbox and self.sandbox != "sandbox off":
            style = "$warning" if "unavailable" in self.sandbox else "$success"
            out["sandbox"] = [Content.styled(self.sandbox, style),
                              Content.styled("sandbox" if style == "$success" else "no sandbox", style)]
        return out

    def fit(self, width: int) -> Content:
        """The parts joined, shortened and dropped in SHRINK_ORDER until they fit `width`."""
        forms = self.parts()
        level = dict.fromkeys(forms, 0)
        sep = Content.assemble(SEP)

        def line() -> Content:
            shown = [f[level[k]] for k, f in forms.items()]
            return sep.join([c for c in shown if c is not None])

        for name in SHRINK_ORDER:
            if len(line()) <= width:
                break
            if name in forms and level[name] < len(forms[name]) - 1:
                level[name] += 1
        return line()

    def render(self) -> Content:
        return self.fit(max(1, self.content_size.width))
