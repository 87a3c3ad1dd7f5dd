"""The compaction inspector: what one compaction replaced and with what — the entries removed or
cleared (with their sizes), the summary or digests put in their place, re-attached files, the tail
kept verbatim, tokens before / after per part, what it cost and where its transcript is. This is
where a user learns what the agent no longer sees.

It shows what the Compaction event carries (`parts` is computed by the loop, see
agent_core/loop/compaction_parts.py); it computes nothing beyond sums for its table.

A compaction preview (`/compact --preview`) opens in the same layout: the event a compaction now
would carry, what each layer would do, its cost and saving, and a key to apply it (the screen is
dismissed with True; the app runs the compaction).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Collapsible, DataTable, Static

from agent_core.events import Compaction
from agent_core.loop.compaction_preview import CompactionPreview
from compaction.cache_economics import reread_text
from compaction.loss_report import summary_line
from agent_core.security.visible_text import one_line, visible

from app import format as fmt
from app.preview_text import money_lines, step_line

# Prices a call's usage in dollars (None when the model has no price).
PriceFn = Callable[[dict], "float | None"]
ENTRY_ROWS = 60      # removed / cleared entries listed before "… and N more"
ADDED_KINDS = {"summary": "summary", "attachment": "re-attached file", "snip_marker": "snip marker",
               "compact_boundary": "boundary (not sent)", "message": "message"}


def part_rows(parts: Mapping[str, Any]) -> list[tuple[str, int, int, int]]:
    """(part, entries, tokens before, tokens after) for the table: what went, what was rewritten in
    place, what came in, what stayed."""
    cleared_b, cleared_a = (list(parts.get("cleared_tokens") or [0, 0]) + [0, 0])[:2]
    kept_n, kept_t = (list(parts.get("kept") or [0, 0]) + [0, 0])[:2]
    by_kind: dict[str, list[int]] = {}
    for a in parts.get("added") or ():
        row = by_kind.setdefault(ADDED_KINDS.get(str(a.get("kind")), str(a.get("kind"))), [0, 0])
        row[0] += 1
        row[1] += int(a.get("tokens") or 0)
    rows = [("removed", int(parts.get("removed_count") or 0), int(parts.get("removed_tokens") or 0), 0),
            ("cleared in place", int(parts.get("cleared_count") or 0), int(cleared_b), int(cleared_a))]
    rows += [(f"added: {kind}", n, 0, t) for kind, (n, t) in sorted(by_kind.items())]
    rows.append(("kept verbatim", int(kept_n), int(kept_t), int(kept_t)))
    return rows


def entry_lines(parts: Mapping[str, Any]) -> str:
    """One line per removed or cleared entry: its tokens, a short uuid and what it was."""
    lines: list[str] = []
    for uuid, label, tokens in (parts.get("removed") or [])[:ENTRY_ROWS]:
        lines.append(f"− {fmt.tokens(int(tokens)):>8}  {one_line(str(uuid)[:8])}  {fmt.one_line(str(label), 90)}")
    more = int(parts.get("removed_count") or 0) - min(ENTRY_ROWS, len(parts.get("removed") or []))
    if more > 0:
        lines.append(f"  … and {more:,} more removed")
    for uuid, label, before, after in (parts.get("cleared") or [])[:ENTRY_ROWS]:
        lines.append(f"~ {fmt.tokens(int(before)):>8} → {fmt.tokens(int(after))}  {one_line(str(uuid)[:8])}  "
                     f"{fmt.one_line(str(label), 80)}")
    more = int(parts.get("cleared_count") or 0) - min(ENTRY_ROWS, len(parts.get("cleared") or []))
    if more > 0:
        lines.append(f"  … and {more:,} more cleared")
    return "\n".join(lines)


def loss_lines(loss: dict[str, Any], cache: dict | None = None) -> str:
    """The loss report (compaction.loss_report) as lines: prompts, files gone (with the re-reads
    the engine expected, from the compaction's `cache`), results cleared, and the names from the
    user's prompts no longer in the context. Names come from the user's own text and file paths
    from tool calls: shown with their control characters made visible."""
    lines = [visible(summary_line(loss, cache))]
    for text in (loss.get("prompts") or {}).get("dropped_list") or ():
        lines.append(f"  prompt dropped: {one_line(str(text))}")
    for path, chars in loss.get("files_gone") or ():
        lines.append(f"  file gone: {one_line(str(path))} ({int(chars):,} chars)")
    more = int(loss.get("files_gone_count") or 0) - len(loss.get("files_gone") or ())
    if more > 0:
        lines.append(f"  … and {more:,} more files")
    missing = [one_line(str(n)) for n in loss.get("missing") or ()]
    if missing:
        lines.append("  no longer in the context: " + ", ".join(missing)
                     + (f" … and {int(loss['missing_count']) - len(missing):,} more"
                        if int(loss.get("missing_count") or 0) > len(missing) else ""))
    return "\n".join(lines)


def cost_lines(c: Compaction, price: PriceFn | None) -> list[str]:
    """What the compaction cost: its own model call (usage and dollars), and what rewriting the
    cached prefix put on the next call, when the layer said."""
    out: list[str] = []
    usage = c.usage or {}
    if usage:
        io = (f"summary call: {fmt.tokens(int(usage.get('input_tokens') or 0))} input, "
              f"{fmt.tokens(int(usage.get('cache_read_input_tokens') or 0))} read from the cache, "
              f"{fmt.tokens(int(usage.get('output_tokens') or 0))} output")
        usd = price(usage) if price is not None else None
        out.append(io + (f" · {fmt.usd(usd)}" if usd is not None else ""))
    else:
        out.append("no model call (this layer rewrites the history itself)")
    clause = fmt.cache_clause(c.cache)
    if clause:
        out.append(clause)
    weighed = weighed_line(c.cache)
    if weighed:
        out.append(weighed)
    return out


def weighed_line(cache: dict | None) -> str:
    """What the rule weighed beside the rewrite (cache_economics: the saving over the calls the
    prefix should live, and what the agent is expected to read again), when the layer said."""
    rereads = reread_text(cache)     # the engine's wording, as the loss report says it
    if not rereads or not isinstance(cache, dict):
        return ""
    ahead, saves = cache.get("calls_ahead"), cache.get("saves_per_call_usd")
    head = ""
    if isinstance(ahead, int) and not isinstance(ahead, bool) and isinstance(saves, (int, float)):
        head = f"weighed: saves {fmt.usd(float(saves) * ahead)} over {ahead:,} calls against "
    return (head or "weighed: ") + rereads


class InspectorScreen(ModalScreen[bool]):
    """One compaction, inspected. `price` turns the summary call's usage into dollars. With
    `preview`, the compaction is one that has not happened: `a` applies it (dismissed with True)."""

    BINDINGS = [Binding("escape,q", "close", "Close", id="inspector.close"),
                Binding("a", "apply", "Apply", id="inspector.apply")]

    def __init__(self, compaction: Compaction, price: PriceFn | None = None,
                 preview: CompactionPreview | None = None) -> None:
        super().__init__()
        self.compaction = compaction
        self.price = price
        self.preview = preview

    def compose(self) -> ComposeResult:
        c = self.compaction
        parts = c.parts
        with VerticalScroll(id="inspector-dialog"):
            head = (f"{one_line(str(c.layer))} ({one_line(str(c.trigger))}) · {fmt.tokens(c.tokens_before)} → "
                    f"{fmt.tokens(c.tokens_after)} tokens "
                    f"· freed {fmt.tokens(max(0, c.tokens_before - c.tokens_after))}")
            if c.duration_s:
                head += f" · took {fmt.duration(c.duration_s)}"
            if c.timestamp:
                head += f" · at {fmt.clock(c.timestamp)}"
            yield Static(Content.assemble((head, "bold")), id="inspector-headline")
            if self.preview is not None:
                yield Static(Content("Nothing has changed yet. Press a to compact now, Esc to close."),
                             id="inspector-keys")
                yield Static(Content("What each layer would do"), classes="inspector-section")
                yield Static(Content("\n".join(step_line(s) for s in self.preview.steps)), id="inspector-steps")
            elif c.action:
                yield Static(Content(visible(str(c.action))), id="inspector-action")
            if parts:
                layers = [one_line(str(x)) for x in parts.get("layers") or ()]
                if len(layers) > 1:
                    yield Static(Content(f"The history changes below are those of the whole run: "
                                         f"{', '.join(layers)}."), classes="inspector-note")
                yield DataTable(id="inspector-parts", show_cursor=False)
                lines = entry_lines(parts)
                yield Static(Content("What the agent no longer sees"), classes="inspector-section")
                yield Static(Content(lines or "(no stored entry was removed or rewritten: this layer changes "
                                               "what is sent, not the history)"), id="inspector-entries")
                loss = parts.get("loss")
                if isinstance(loss, dict):
                    yield Static(Content("What was lost"), classes="inspector-section")
                    yield Static(Content(loss_lines(loss, c.cache)), id="inspector-loss")
                for a in parts.get("added") or ():
                    kind = ADDED_KINDS.get(str(a.get("kind")), str(a.get("kind")))
                    where = f" {a['path']}" if a.get("path") else ""
                    # A str title is markup to a Collapsible: a file's name goes in as Content, which
                    # its title widget takes (Textual types the argument as str only).
                    title = Content(one_line(f"{kind}{where} · {fmt.tokens(int(a.get('tokens') or 0))} tokens"))
                    yield Collapsible(Static(Content(visible(str(a.get("text") or "(empty)"))),
                                             classes="inspector-text"),
                                      title=title,  # type: ignore[arg-type]
                                      collapsed=kind != "summary", classes="inspector-added")
            else:
                yield Static(Content("Entry-level changes were not recorded for this compaction (an older "
                                     "session log, or an earlier layer of a run whose last compaction holds "
                                     "them)."), classes="inspector-note")
            yield Static(Content("Cost"), classes="inspector-section")
            cost = money_lines(self.preview) if self.preview is not None else cost_lines(c, self.price)
            yield Static(Content("\n".join(cost)), id="inspector-cost")
            where = "transcript (would be written): " if self.preview is not None else "transcript: "
            yield Static(Content.assemble(where, (fmt.path(c.transcript_path), "underline"))
                         if c.transcript_path else Content("transcript: none (this layer writes none)"),
                         id="inspector-transcript")

    def on_mount(self) -> None:
        self.query_one("#inspector-dialog").border_title = ("Compaction preview" if self.preview is not None
                                                            else "Compaction inspector")
        if not self.compaction.parts:
            return
        table = self.query_one("#inspector-parts", DataTable)
        table.add_column("part", key="part")
        for key in ("entries", "before", "after"):
            table.add_column(Text(key if key == "entries" else f"tokens {key}", justify="right"), key=key)
        for name, n, before, after in part_rows(self.compaction.parts):
            table.add_row(Text(one_line(name)), Text(f"{n:,}", justify="right"),
                          Text(fmt.tokens(before), justify="right"),
                          Text(fmt.tokens(after), justify="right"))

    def action_apply(self) -> None:
        if self.preview is not None:    # a compaction that happened has nothing to apply
            self.dismiss(True)

    def action_close(self) -> None:
        self.dismiss(False)
