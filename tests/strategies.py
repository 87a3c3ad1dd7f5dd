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
