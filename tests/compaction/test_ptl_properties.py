"""Property: a summary request that does not fit never loses what the summary must carry. Over generated
histories holding earlier summaries (a compaction's at the head, collapse digests and snip markers between
rounds), a summarizer answers prompt-too-long one to three times before it succeeds; every request it got is
valid and holds every earlier summary's text verbatim and every user message's text verbatim (a very long one
at least by its head and tail, the last thing shed) — except what belongs to the turn in progress, which the new
history keeps verbatim instead."""
from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import event, given, settings
from hypothesis import strategies as st

from compaction import Entry, SummarizeError, boundary, project, round_starts, user, validate_history
from compaction.layers.autocompact import split_turn
from compaction.layers.collapse import LONG_USER_CHARS, USER_HEAD_CHARS, USER_TAIL_CHARS
from compaction.rounds import newest_round_tokens

from tests.compaction.autocompact_helpers import SUMMARY, ScriptedSummarizer, make_pipeline
from tests.hypothesis_budget import examples
from tests.strategies import histories


def tagged(entries: list[Entry], long: int | None) -> list[Entry]:
    """Every user text block made distinctive (`[prompt k] ...`), so 'present verbatim' means something;
    the `long`-th one also made very long (a pasted log, say)."""
    out, k = [], 0
    for e in entries:
        if e.role == "user":
            content = []
            for b in e.content:
                if b.get("type") == "text":
                    k += 1
                    pasted = f" pasted {'p' * 12_000} end of paste {k}" if k == long else ""
                    b = {**b, "text": f"[prompt {k}] {b['text']}{pasted}"}
                content.append(b)
            e = e.with_content(content)
        out.append(e)
    return out


@st.composite
def summarised_histories(draw) -> list[Entry]:
    """What a session looks like after earlier compactions: a boundary and its summary (perhaps a
    re-attached file) ahead of a generated history, and digests or snip markers between its rounds."""
    body = tagged(draw(histories(min_rounds=2, max_rounds=25)), draw(st.one_of(st.none(), st.integers(1, 6))))
    size = draw(st.sampled_from([40, 2_000, 30_000]))
    head = [boundary("auto", 90_000, 9_000, "/tmp/t.jsonl", "autocompact"),
            user(f"EARLIER SUMMARY head: the deploy key is in vault/deploy. {'s' * size}", kind="summary",
                 layer="autocompact")]
    if draw(st.booleans()):
        head.append(user("Re-attached after compaction: a.py\n<file path=\"a.py\">\n" + "f" * 9_000 + "\n</file>",
                         kind="attachment", path="a.py"))
    starts = round_starts(body)[1:]
    picks = draw(st.lists(st.sampled_from(starts), max_size=3, unique=True)) if starts else []
    for i in sorted(picks, reverse=True):
        kind = draw(st.sampled_from(["summary", "snip_marker"]))
        body.insert(i, user(f"EARLIER {kind} at {i}: fact {i} is {i * 7}. {'d' * draw(st.sampled_from([10, 3_000]))}",
                            kind=kind))
    return head + body


def protected_texts(entries) -> list[str]:
    """Summaries', digests' and snip markers' text, and every user message's own text."""
    out = []
    for e in entries:
        if e.sent and (e.kind in ("summary", "snip_marker") or (e.kind == "message" and e.role == "user")):
            out += [b["text"] for b in e.content if b.get("type") == "text" and b["text"].strip()]
    return out


def present(t: str, text: str) -> bool:
    """Verbatim — or, for a very long user message, by its head and tail (the engine's way of quoting one)."""
    return t in text or (len(t) > LONG_USER_CHARS and t[:USER_HEAD_CHARS] in text and t[-USER_TAIL_CHARS:] in text)


def texts(messages) -> str:
    return "\n".join(b["text"] for m in messages for b in m["content"] if b.get("type") == "text")


too_long = st.one_of(       # the API's refusal, with and without its token gap, raised or answered as text
    st.integers(1, 80_000).map(lambda gap: SummarizeError(
        f"prompt is too long: {200_000 + gap} tokens > 200000 maximum", prompt_too_long=True)),
    st.just(SummarizeError("prompt is too long", prompt_too_long=True)),
    st.integers(1, 30_000).map(lambda gap: f"Prompt is too long: {200_000 + gap} tokens > 200000 maximum"),
)


@settings(max_examples=examples(120), deadline=None)
@given(summarised_histories(), st.lists(too_long, min_size=1, max_size=3), st.sampled_from([20_000, 200_000]),
       st.sampled_from(["manual", "reactive"]))
def test_no_retry_loses_an_earlier_summary_or_a_users_words(entries, refusals, window, trigger):
    with tempfile.TemporaryDirectory() as d:
        s = ScriptedSummarizer(*refusals, SUMMARY)
        p = make_pipeline(Path(d), s, window=window, llm_only=True)
        res = asyncio.run(p.compact(entries, trigger=trigger))
    sent = [e for e in entries if e.sent]
    protected = protected_texts(sent)
    split = split_turn(sent) if trigger != "manual" else None
    in_turn = set(protected_texts(split[1])) if split else set()
    if not s.calls:     # automatic/reactive, and the newest round alone reaches the blocking limit: no summary
        assert trigger != "manual" and [e.uuid for e in res.entries] == [e.uuid for e in entries]
        assert newest_round_tokens(entries, p.config.overhead_tokens) >= p.config.budget.blocking_limit
        event("declined: the newest round alone cannot fit")
        return
    if len(s.calls) == 1:       # nothing may be shed (no tool output, only summaries and users' words): it fails
        assert [e.uuid for e in res.entries] == [e.uuid for e in entries]
        assert any("too long" in r.action or "too long" in str(r.details) for r in res.reports)
        event("failed at once: nothing sheddable")
    requests = [texts(c["messages"]) for c in s.calls]
    for call, text in zip(s.calls, requests):
        assert validate_history(call["messages"]) == []
        for t in protected:
            assert present(t, text) or t in in_turn, f"lost from a summary request: {t[:60]!r}"
    assert validate_history(project(res.entries)) == []
    compacted = [e.uuid for e in res.entries] != [e.uuid for e in entries]
    [report] = [r for r in res.reports if r.layer == "autocompact"] or [res.reports[0]]
    if compacted:
        kept = texts(project(res.entries))
        for t in protected:          # summarised in every request, or kept verbatim after the summary
            assert all(present(t, text) for text in requests) or t in kept
        details = report.details
        assert details["ptl_retries"] == len(s.calls) - 1
        event("compacted, rounds dropped" if details["dropped_rounds"] else "compacted, tool output shed only")
        if details["shortened_user_messages"]:
            event("compacted, a long user message kept by head and tail")
        if details["kept_turn_messages"]:
            event("turn in progress kept")
    else:                                                      # a failure keeps the history
        event(f"failed: {report.details.get('reason', report.action)[:40]}")
