"""Hypothesis strategies: valid histories of entries, shaped like real agent sessions."""
from __future__ import annotations

from hypothesis import strategies as st

from compaction.entry import Entry, tool_result_block

TOOLS = ["bash", "read_file", "grep", "glob", "write_file", "edit_file"]

texts = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=80).filter(
    lambda s: s.strip())


@st.composite
def result_content(draw) -> str:
    size = draw(st.sampled_from([0, 5, 50, 150, 400, 3_000, 60_000]))
    if size == 0:
        return "ok"
    ch = draw(st.sampled_from("abxyz{"))
    return (ch * size) if ch != "{" else "{" + "\"k\": 1, " * (size // 8) + "\"z\": 0}"


@st.composite
def histories(draw, min_rounds: int = 1, max_rounds: int = 30) -> list[Entry]:
    """A valid history: user first, every tool_use answered in the next message, the last
    assistant may leave its calls unanswered only if it is last."""
    n = draw(st.integers(min_rounds, max_rounds))
    t = 1_700_000_000.0
    out: list[Entry] = [Entry({"role": "user", "content": [{"type": "text", "text": draw(texts)}]}, timestamp=t)]
    running = 50
    counter = 0
    for r in range(n):
        t += draw(st.sampled_from([1.0, 30.0, 600.0, 4_000.0]))
        rid = f"msg_{r:05d}"
        ncalls = draw(st.integers(0, 3))
        calls = []
        for _ in range(ncalls):
            counter += 1
            calls.append({"type": "tool_use", "id": f"toolu_{counter:06d}", "name": draw(st.sampled_from(TOOLS)),
                          "input": {"arg": draw(texts)}})
        text = [{"type": "text", "text": draw(texts)}] if (draw(st.booleans()) or not calls) else []
        usage = None
        if draw(st.booleans()):
            running += draw(st.integers(10, 3_000))
            usage = {"input_tokens": running, "output_tokens": draw(st.integers(1, 500)),
                     "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        split = draw(st.booleans()) and text and calls
        if split:  # CC writes one record per block, all with the same response id
            out.append(Entry({"role": "assistant", "content": text}, response_id=rid, timestamp=t))
            out.append(Entry({"role": "assistant", "content": calls}, response_id=rid, usage=usage, timestamp=t))
        else:
            out.append(Entry({"role": "assistant", "content": text + calls}, response_id=rid, usage=usage, timestamp=t))
        last = r == n - 1
        if calls:
            if last and draw(st.booleans()):
                break
            results = [tool_result_block(c["id"], draw(result_content()), is_error=draw(st.booleans()) and False)
                       for c in calls]
            extra = [{"type": "text", "text": draw(texts)}] if draw(st.booleans()) else []
            out.append(Entry({"role": "user", "content": results + extra}, timestamp=t + 1))
        elif not last or draw(st.booleans()):
            out.append(Entry({"role": "user", "content": [{"type": "text", "text": draw(texts)}]}, timestamp=t + 1))
    return out


# ----- configs (for the layer properties) --------------------------------------------------------

ratios = st.floats(0.0, 1.2, allow_nan=False)
small_ratios = st.one_of(st.floats(0.0, 0.3), ratios)


@st.composite
def configs(draw):
    """Any PipelineConfig a user could set, biased to small windows and usual tool sets so every
    layer gets to act."""
    from compaction.accounting.budget import ContextBudget
    from compaction.layer_context import PipelineConfig

    window = draw(st.sampled_from([1_000, 2_000, 5_000, 20_000, 60_000, 200_000]))
    budget = ContextBudget(window, draw(st.integers(1, 64_000)), autocompact_enabled=draw(st.booleans()))
    tools = st.frozensets(st.sampled_from(TOOLS))
    default = PipelineConfig()
    return PipelineConfig(
        budget=budget, overhead_tokens=draw(st.integers(0, 3_000)),
        tool_result_max_chars=draw(st.sampled_from([0, 10, 120, 2_000, 50_000])),
        message_results_max_chars=draw(st.sampled_from([0, 100, 5_000, 200_000])),
        preview_bytes=draw(st.sampled_from([0, 7, 300, 2_000])),
        self_bounded_tools=draw(st.one_of(st.just(default.self_bounded_tools), tools)),
        snip_enabled=draw(st.booleans()),
        snip_trigger_ratio=draw(st.one_of(st.none(), small_ratios)),
        snip_target_ratio=draw(small_ratios), snip_keep_recent_ratio=draw(small_ratios),
        snip_keep_recent_rounds=draw(st.integers(0, 4)), snip_growth_ratio=draw(st.floats(0, 0.3)),
        microcompact_enabled=draw(st.booleans()),
        compactable_tools=draw(st.one_of(st.just(default.compactable_tools), tools)),
        preserved_tools=draw(st.one_of(st.just(frozenset()), tools)),
        micro_keep_recent=draw(st.integers(0, 6)), micro_min_chars=draw(st.sampled_from([0, 3, 100, 1_000])),
        micro_trigger_ratio=draw(small_ratios), micro_clear_at_least_ratio=draw(st.floats(0, 0.3)),
        time_based_enabled=draw(st.booleans()), time_gap_minutes=draw(st.sampled_from([0.0, 1.0, 60.0])),
        time_keep_recent=draw(st.integers(0, 6)),
        collapse_enabled=draw(st.booleans()), collapse_commit_ratio=draw(small_ratios),
        collapse_target_ratio=draw(small_ratios), collapse_keep_recent_ratio=draw(small_ratios),
        collapse_keep_recent_rounds=draw(st.integers(0, 4)), collapse_span_rounds=draw(st.integers(1, 8)),
        collapse_digest_chars=draw(st.sampled_from([0, 40, 600])),
    )
