"""Issue 13 §1 on screen: a compaction's cache cost in the timeline row and the conversation marker
(shown when the layer said it, nothing broken when it did not), and the compaction purpose's cache
reads in the cost pane."""
from __future__ import annotations

from rich.console import Console
from textual.app import App, ComposeResult

from agent_core import events as ev
from app import format as fmt
from app.tui.widgets.conversation.archive import Archive
from app.tui.widgets.conversation.compaction_marker import MarkerRecord
from app.tui.widgets.conversation.draw import Look
from app.widgets.cost_pane import CostPane
from app.widgets.timeline import Timeline

CLAUSE = "; rewrote 12,644 cached tokens, $0.039; saves $0.00045 per call; keeps the count under the threshold"
CACHE = {"reason": "prevents_summary", "rewrite_tokens": 12_644, "cost_usd": 0.0391, "saves_per_call_usd": 0.00045,
         "payback_calls": 86.9}


def compaction(cache=None, action="cleared 3 old tool results" + CLAUSE) -> ev.Compaction:
    return ev.Compaction(layer="microcompact", trigger="auto", tokens_before=15_000, tokens_after=12_000,
                         duration_s=0.01, action=action, cache=cache)


class Host(App):
    def compose(self) -> ComposeResult:
        yield Timeline(id="timeline", clock=lambda: 0.0)
        yield CostPane(id="cost")


def test_cache_clause_words():
    assert fmt.cache_clause(CACHE) == "cache $0.04, saves " + fmt.usd(0.00045) + "/call"
    paying = {"cost_usd": -0.011104, "saves_per_call_usd": 0.000888}
    assert fmt.cache_clause(paying) == "cache -$0.01, saves $0.0009/call"
    assert fmt.signed_usd(-0.004) == "-$0.0040" and fmt.signed_usd(0.5) == "$0.50" and fmt.signed_usd(None) == "?"
    assert fmt.cache_clause(None) == "" and fmt.cache_clause({"reason": "cold"}) == ""
    assert fmt.cache_clause({"cost_usd": "junk", "saves_per_call_usd": None}) == ""


async def test_timeline_row_shows_the_cache_cost_and_nothing_when_absent():
    app = Host()
    async with app.run_test():
        t = app.query_one(Timeline)
        t.add_compaction(compaction(CACHE))
        t.add_compaction(compaction(None, action="summarised"))
        t.add_compaction(compaction({"cost_usd": -0.011104}))
        assert t.get_row("c1")[t.columns_shown.index("cache")].plain == fmt.usd(0.0391)
        assert t.get_row("c2")[t.columns_shown.index("cache")].plain == ""
        assert t.get_row("c3")[t.columns_shown.index("cache")].plain == "-" + fmt.usd(0.011104)


def shown(marker: MarkerRecord) -> str:
    """The marker's text, and the same words as its drawn lines say them (wide enough not to wrap)."""
    text = marker.content().plain
    drawn = "\n".join(s.text.rstrip() for s in marker.draw(Look(Console(width=300)), 300))
    assert drawn.strip() == "\n".join(" " + line for line in text.splitlines()).strip()
    return text


def test_marker_shows_the_layers_clause_once_or_the_figures_when_the_action_lacks_them():
    with_clause = MarkerRecord("microcompact", "auto", 15_000, 12_000, None, compaction().action, CACHE)
    text = shown(with_clause)
    assert "saves $0.00045 per call" in text and "/call" not in text        # said once, in the layer's words
    bare = MarkerRecord("collapse", "auto", 15_000, 12_000, None, "collapsed 2 spans", CACHE)
    assert fmt.cache_clause(CACHE) in shown(bare)
    plain = MarkerRecord("autocompact", "manual", 15_000, 3_000, None, "Summarised 10 messages")
    assert "cache" not in shown(plain)
    # paged out (kept compressed) and drawn again, a marker keeps its cache figures
    back_plain, back_bare = Archive([plain, bare])
    assert back_plain.cache is None and back_bare.cache == CACHE
    assert shown(back_bare) == shown(bare) and shown(back_plain) == shown(plain)


async def test_cost_pane_shows_what_compaction_read_from_the_cache():
    row = {"input": 10, "output": 500, "cache_write_5m": 1_500, "cache_write_1h": 0, "cache_read": 12_300,
           "cost_usd": 0.02, "requests": 1}
    main = {**row, "cache_read": 40_000, "cost_usd": 0.1, "requests": 4}
    update = ev.CostUpdate(total_usd=0.12, by_model={"claude-sonnet-4-6": main},
                           by_purpose={"main": main, "compaction": row}, cache_hit_rate=0.8, saved_usd=0.05)
    app = Host()
    async with app.run_test():
        pane = app.query_one(CostPane)
        pane.cost = update
        await app.workers.wait_for_complete()
        summary = str(pane.query_one("#cost-summary").render())
        assert f"compaction {fmt.usd(0.02)} ({fmt.short_tokens(12_300)} read from cache)" in summary
        pane.cost = ev.CostUpdate(total_usd=0.1, by_model={"m": main}, by_purpose={"main": main})
        summary = str(pane.query_one("#cost-summary").render())
        assert "read from cache" not in summary and "compaction $0" in summary
