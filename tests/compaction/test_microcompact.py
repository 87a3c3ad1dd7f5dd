"""Layer 3: microcompact — count-based with batching, time-based, seen results only."""
from __future__ import annotations

from dataclasses import dataclass

from compaction import (ContextBudget, Entry, PipelineConfig, PipelineState, count_tokens, project,
                        tool_result_block, validate_history)
from compaction.layers import microcompact as mc
from compaction.layer_context import LayerContext

T0 = 1_700_000_000.0
BUDGET = ContextBudget(60_000, 8_000)  # E 54,000: trigger (0.5) 27,000, batch (0.05) 2,700 tokens


def session(tools: list[str], size: int = 4_000, usage: int = 30_000, unseen: str | None = None) -> list[Entry]:
    """One round per tool; the last response carries `usage`. With `unseen`, the history ends with
    a call to that tool and its result, which the model has not seen yet."""
    es = [Entry({"role": "user", "content": [{"type": "text", "text": "start"}]}, timestamp=T0)]
    for r, name in enumerate(tools):
        tid = f"t{r}"
        last = r == len(tools) - 1 and unseen is None
        es.append(Entry({"role": "assistant", "content": [
            {"type": "tool_use", "id": tid, "name": name, "input": {"command": "x"}}]}, response_id=f"m{r}",
            timestamp=T0 + 10 * r, usage={"input_tokens": usage, "output_tokens": 5} if last else None))
        es.append(Entry({"role": "user", "content": [tool_result_block(tid, f"{r}:" + "o" * size)]},
                        timestamp=T0 + 10 * r + 1))
    if unseen is not None:
        es.append(Entry({"role": "assistant", "content": [
            {"type": "tool_use", "id": "new", "name": unseen, "input": {"command": "x"}}]}, response_id="mlast",
            timestamp=T0 + 10 * len(tools), usage={"input_tokens": usage, "output_tokens": 5}))
        es.append(Entry({"role": "user", "content": [tool_result_block("new", "N" * 50_000)]},
                        timestamp=T0 + 10 * len(tools) + 1))
    return es


def ctx(es, state=None, now=None, budget: ContextBudget = BUDGET, **cfg) -> LayerContext:
    """The count-based mechanics on their own (keep window, batching, who is cleared): the cache rule
    that may hold a clear back is tested in test_cache_economics.py."""
    cfg.setdefault("cache_aware", False)
    return LayerContext(PipelineConfig(budget=budget, **cfg), state or PipelineState(),
                        None, now if now is not None else es[-1].timestamp + 5, count_tokens(es))


def results(es) -> dict[str, object]:
    return {b["tool_use_id"]: b["content"] for e in es for b in e.content if b.get("type") == "tool_result"}


def test_count_based_keeps_the_last_five_seen_and_names_the_tool():
    # the count alone (micro_keep_share=0): the share would keep all ten ~1,000-token results here
    es = session(["bash", "grep", "glob", "bash", "edit_file", "bash", "grep", "bash", "write_file", "bash"])
    res = mc.apply(es, ctx(es, micro_keep_share=0.0))
    got = results(res.entries)
    assert [got[f"t{i}"] for i in range(4)] == ["[Old result of bash cleared]", "[Old result of grep cleared]",
                                                 "[Old result of glob cleared]", "[Old result of bash cleared]"]
    # t9 answers the last response: not seen yet; t4..t8 are the last five seen
    assert all(got[f"t{i}"].startswith(f"{i}:") for i in range(4, 10))
    assert res.report is not None and res.report.details["cleared"] == 4
    freed = sum(a.tokens for a in es) - sum(b.tokens for b in res.entries)
    assert count_tokens(res.entries) == count_tokens(es) - freed  # anchor shifted by what was freed
    assert validate_history(project(res.entries)) == []
    assert results(es)["t0"].startswith("0:")  # input untouched


def test_a_result_the_model_has_not_seen_is_never_cleared():
    es = session(["bash"] * 8, unseen="bash")
    for c in (ctx(es, micro_keep_recent=0, micro_keep_share=0.0, micro_clear_at_least_ratio=0.0),
              ctx(es, now=es[-1].timestamp + 5 * 3600, time_keep_recent=0)):
        res = mc.apply(es, c)
        assert res.report is not None
        assert results(res.entries)["new"] == "N" * 50_000


def test_preserved_short_and_other_tools_are_left_alone():
    es = session(["read_file"] * 6 + ["compact"] * 2 + ["bash"] * 6)
    es[18] = Entry({"role": "user", "content": [tool_result_block("t8", "short")]})
    res = mc.apply(es, ctx(es, preserved_tools=frozenset({"read_file"}), micro_keep_recent=1, micro_keep_share=0.0,
                          micro_clear_at_least_ratio=0.0))
    got = results(res.entries)
    assert all(got[f"t{i}"].startswith(f"{i}:") for i in range(8))  # preserved, and compact is not compactable
    assert got["t8"] == "short"
    assert [got[f"t{i}"] for i in (9, 10, 11)] == ["[Old result of bash cleared]"] * 3
    assert got["t12"].startswith("12:") and got["t13"].startswith("13:")  # kept (last seen), unseen


def test_count_based_waits_for_its_trigger():
    es = session(["bash"] * 10, usage=20_000)
    assert count_tokens(es) < 27_000
    res = mc.apply(es, ctx(es))
    assert res.report is None and res.entries is es


def test_batching_waits_until_clearing_is_worth_a_cache_rewrite():
    # each result is ~1,000 tokens; 2,700 must be freed at once. The keep window by count alone
    # (micro_keep_share=0), so one more round puts one more result outside it
    es = session(["bash"] * 8, size=4_000)  # 7 seen, the 8th not yet
    state = PipelineState()
    r1 = mc.apply(es, ctx(es, state, micro_keep_share=0.0))  # two seen results beyond the last five: ~2,000 tokens
    assert r1.report is None and r1.entries is es
    more = extend(es, 1)
    r2 = mc.apply(more, ctx(more, state, micro_keep_share=0.0))  # three: worth it
    assert r2.report is not None and r2.report.details["cleared"] == 3
    assert r2.report.details["freed_estimate"] >= 2_700
    more2 = extend(r2.entries, 1)
    r3 = mc.apply(more2, ctx(more2, state, micro_keep_share=0.0))  # one newly old result: not worth a rewrite yet
    assert r3.report is None


def extend(es: list[Entry], rounds: int) -> list[Entry]:
    out = list(es)
    for _ in range(rounds):
        tid = f"x{len(out)}"
        out.append(Entry({"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "bash",
                                                            "input": {"command": "x"}}]}, response_id=tid,
                         timestamp=out[-1].timestamp + 10, usage={"input_tokens": 30_000, "output_tokens": 5}))
        out.append(Entry({"role": "user", "content": [tool_result_block(tid, "o" * 4_000)]},
                         timestamp=out[-1].timestamp + 1))
    # only the last response keeps its usage
    return [e if e.usage is None or e is out[-2] else Entry(e.message, uuid=e.uuid, response_id=e.response_id,
                                                            timestamp=e.timestamp, meta=e.meta) for e in out]


def test_time_based_clears_all_but_the_last_five_after_an_explicit_hour():
    es = session(["bash"] * 9, usage=2_000)  # far below the count trigger
    quiet = mc.apply(es, ctx(es, now=es[-1].timestamp + 59 * 60, time_gap_minutes=60))
    assert quiet.report is None
    res = mc.apply(es, ctx(es, now=es[-1].timestamp + 61 * 60, time_gap_minutes=60))
    assert res.report is not None and res.report.trigger == "time"
    got = results(res.entries)
    # t3..t7 kept, t8 unseen
    assert [got[f"t{i}"] == "[Old result of bash cleared]" for i in range(9)] == [True] * 3 + [False] * 6


def test_time_based_follows_the_cache_ttl_by_default():
    es = session(["bash"] * 9, usage=2_000)
    last = es[-2].timestamp  # the last response
    assert mc.apply(es, ctx(es, now=last + 299)).report is None
    res = mc.apply(es, ctx(es, now=last + 301))
    assert res.report is not None and res.report.trigger == "time"
    assert res.report.details["cache"]["reason"] == "cold"
    assert "; cache cold: rewrite free; saves $" in res.report.action
    assert mc.apply(es, ctx(es, now=last + 59 * 60, cache_ttl="1h")).report is None
    assert mc.apply(es, ctx(es, now=last + 61 * 60, cache_ttl="1h")).report.trigger == "time"


def test_time_based_keeps_at_least_one():
    es = session(["bash"] * 3, usage=2_000)
    res = mc.apply(es, ctx(es, now=es[-1].timestamp + 7_200, time_keep_recent=0))
    assert results(res.entries)["t2"].startswith("2:")


def test_incremental_runs_match_a_fresh_scan():
    es = session(["bash"] * 12)
    state = PipelineState()
    step = es[:9]
    out = mc.apply(step, ctx(step, state)).entries
    for k in range(11, len(es) + 1, 2):
        step = out + es[len(step):k]
        out = mc.apply(step, ctx(step, state)).entries
    fresh = mc.apply(out, ctx(out)).entries  # a new process scanning all
    assert results(fresh) == results(out)


# ----- the keep window's share of the effective window (issue 49) ----------------------------------

def kept_and_cleared(es: list[Entry]) -> tuple[list[str], list[str]]:
    got = results(es)
    cleared = [t for t, c in got.items() if c == "[Old result of bash cleared]"]
    return [t for t in got if t not in cleared], cleared


def test_the_keep_window_holds_the_newest_results_up_to_a_share_of_the_window():
    """Issue 49: measured in a closed loop against the real Claude Code, keeping only the last five
    results cleared the file reads the agent was asked about next. The count-based keep window also
    holds the newest seen results while they add up to `micro_keep_share` (a quarter) of the
    effective window — and never fewer than `micro_keep_recent`."""
    share = int(0.25 * BUDGET.effective_window)                 # 13,500
    es = session(["bash"] * 20, size=4_000)                     # 19 seen results of 987 tokens, t19 unseen
    free = mc._freeable(tool_result_block("t0", "0:" + "o" * 4_000), "bash", 100)
    res = mc.apply(es, ctx(es))
    kept, cleared = kept_and_cleared(res.entries)
    assert cleared == [f"t{i}" for i in range(6)]               # 13 seen kept: 13 × 987 <= 13,500 < 14 × 987
    assert kept == [f"t{i}" for i in range(6, 20)]
    assert 13 * free <= share < 14 * free
    # by count alone, only the last five seen
    assert kept_and_cleared(mc.apply(es, ctx(es, micro_keep_share=0.0)).entries)[1] == [f"t{i}" for i in range(14)]

    big = session(["bash"] * 8, size=24_000, usage=40_000)      # 5,987 tokens each: five are more than the share
    assert kept_and_cleared(mc.apply(big, ctx(big)).entries)[1] == ["t0", "t1"]             # the count rules
    assert kept_and_cleared(mc.apply(big, ctx(big, micro_keep_recent=0)).entries)[1] == \
        ["t0", "t1", "t2", "t3", "t4"]                          # the share alone: two (11,974 <= 13,500)


def test_at_a_small_window_the_count_rules():
    """At an 8,000-token window a quarter of the effective window (1,800 tokens) holds fewer
    results than the last five: the keep window is the count's, exactly as with no share."""
    small = ContextBudget(8_000, 8_000)
    assert int(0.25 * small.effective_window) == 1_800
    es = session(["bash"] * 8, size=2_000, usage=4_000)         # 487 tokens each: five are 2,435
    res = mc.apply(es, ctx(es, budget=small))
    assert res.report is not None
    assert results(res.entries) == results(mc.apply(es, ctx(es, budget=small, micro_keep_share=0.0)).entries)
    assert kept_and_cleared(res.entries)[1] == ["t0", "t1"]


class Touches(list):
    """A list that counts the items read from it (an index reads one, a slice its length)."""
    count = 0

    def __getitem__(self, k):
        got = super().__getitem__(k)
        Touches.count += len(got) if isinstance(k, slice) else 1
        return got


@dataclass
class CountingBook(mc.Book):
    def __post_init__(self) -> None:
        self.seen = Touches(self.seen)


def touched_per_turn(monkeypatch, turns: int) -> tuple[list[int], list[str], int]:
    """`turns` rounds, each answered by a result too short to clear (it frees nothing, so it never
    fills the share), and every 50th by a ~1,000-token one; microcompact runs after each as the loop
    runs it. Returns the records read per turn, the results cleared and the records held at the end."""
    monkeypatch.setattr(mc, "Book", CountingBook)
    cfg = PipelineConfig(budget=BUDGET, cache_aware=False)
    state = PipelineState()
    es = [Entry({"role": "user", "content": [{"type": "text", "text": "start"}]}, timestamp=T0)]
    per_turn = []
    for r in range(turns):
        tid = f"t{r}"
        es.append(Entry({"role": "assistant", "content": [
            {"type": "tool_use", "id": tid, "name": "bash", "input": {"command": "x"}}]}, response_id=f"m{r}",
            timestamp=T0 + 10 * r))
        body = f"{r}:" + ("o" * 4_000 if r % 50 == 0 else "ok")
        es.append(Entry({"role": "user", "content": [tool_result_block(tid, body)]}, timestamp=T0 + 10 * r + 1))
        Touches.count = 0
        es = mc.apply(es, LayerContext(cfg, state, None, T0 + 10 * r + 5, 30_000)).entries
        per_turn.append(Touches.count)
    book = state.__dict__["_runtime"][mc.NAME]["book"]
    return per_turn, [t for t, c in results(es).items() if str(c).startswith("[Old result")], len(book.seen)


def test_thousands_of_tiny_results_cost_a_bounded_amount_per_turn(monkeypatch):
    """Results too short to clear free nothing, so they never fill the share: the scan for it looks
    at no more than KEEP_SCAN results past the counted ones, and what lies beyond is let go. A
    1,000-turn session reads as few records on its last turn as on its 300th, and its large results
    are still cleared once they are older than that."""
    per_turn, cleared, held = touched_per_turn(monkeypatch, 1_000)
    window = 2 * (mc.KEEP_SCAN + 5)                  # the scan reads each record it passes twice
    pending = 3 * 50                                 # a batch is three large results, 50 rounds apart
    assert max(per_turn) <= window + 3 * pending, max(per_turn)      # a clear reads the pending records
    assert sum(per_turn) <= len(per_turn) * (window + 5)             # ... rarely: amortized, the scan
    assert max(per_turn[-150:]) <= max(per_turn[300:450])            # the last turns cost no more than turn 300
    assert held <= mc.KEEP_SCAN + 5 + pending
    assert cleared and all(int(t[1:]) % 50 == 0 for t in cleared)
    assert "t900" not in cleared and "t950" not in cleared        # within the last KEEP_SCAN + 5 results
    # without the bound the scan would go back over every tiny result, every turn
    monkeypatch.setattr(mc, "KEEP_SCAN", 10**9)
    unbounded, _, held = touched_per_turn(monkeypatch, 600)
    assert unbounded[-1] > 600 and held > 590
