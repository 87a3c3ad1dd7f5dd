"""Events to telemetry records, without OpenTelemetry: the buckets and prices of a call, the cost
book's growth per model and bucket, a compaction's figures."""
from __future__ import annotations

from agent_core import events as ev
from agent_core.telemetry.mapping import CallRecord, CompactionRecord, ContextRecord, CostRecord, Mapper, TurnRecord

USAGE = {"input_tokens": 100, "output_tokens": 40, "cache_read_input_tokens": 1_000,
         "cache_creation_input_tokens": 300, "cache_creation": {"ephemeral_5m_input_tokens": 200,
                                                                "ephemeral_1h_input_tokens": 100}}


def _cost(model_rows):
    return ev.CostUpdate(total_usd=None, by_model={m: {"usd_by_bucket": split} for m, split in model_rows.items()})


def test_a_model_call_carries_its_buckets_and_price():
    priced = []
    m = Mapper("claude-x", lambda model, usage: priced.append((model, usage)) or 0.25, clock=lambda: 1000.0)
    [r] = m.records(ev.ModelCall(message_id="msg_1", model="claude-x-2", purpose="compaction", usage=USAGE,
                                 duration_s=2.5))
    assert isinstance(r, CallRecord)
    assert dict(r.buckets) == {"input": 100, "output": 40, "cache_write_5m": 200, "cache_write_1h": 100,
                               "cache_read": 1_000}
    assert r.input_tokens == 1_400 and r.cache_creation_tokens == 300      # all input, as the GenAI conventions count
    assert (r.request_model, r.response_model, r.purpose, r.cost_usd, r.end_s, r.duration_s) == (
        "claude-x", "claude-x-2", "compaction", 0.25, 1000.0, 2.5)
    assert priced == [("claude-x-2", USAGE)]


def test_a_price_that_fails_is_unknown_not_an_error():
    def boom(model, usage):
        raise RuntimeError("no price")
    [r] = Mapper("m", boom).records(ev.ModelCall(message_id="x", model="m", purpose="main", usage={}))
    assert r.cost_usd is None and r.input_tokens == 0


def test_cost_records_are_what_the_cost_book_added_since_the_last_event():
    before = _cost({"m": {"input": 1.0, "output": 2.0}})           # a resumed session's earlier runs
    m = Mapper("m", lambda *a: None, cost_before=before)
    assert m.records(_cost({"m": {"input": 1.5, "output": 2.0}, "n": {"cache_read": 0.25}})) == [
        CostRecord("m", "input", 0.5), CostRecord("n", "cache_read", 0.25)]
    assert m.records(_cost({"m": {"input": 1.5, "output": 2.0}, "n": {"cache_read": 0.25}})) == []
    assert m.records(ev.CostUpdate(total_usd=None, by_model={"m": {"cost_usd": None}})) == []   # unsplit: nothing


def test_a_compaction_context_and_turns():
    m = Mapper("m", lambda model, usage: 0.125 if usage else None)
    c = ev.Compaction(layer="autocompact", trigger="auto", tokens_before=9_000, tokens_after=2_000, duration_s=1.5,
                      timestamp=500.0, cache={"cost_usd": 0.01, "reason": "pays"}, usage={"output_tokens": 10})
    assert m.records(c) == [CompactionRecord("autocompact", "auto", 9_000, 2_000, 1.5, 500.0, 0.01, 0.125)]
    ctx = ev.ContextUpdate(tokens=5, window=100, threshold=80, state="ok", percent_left=90.0)
    assert m.records(ctx) == [ContextRecord("m", 5, 100, 80, "ok")]
    assert m.records(ev.TurnStarted(turn=3, prompt="p")) == [TurnRecord(3, False)]
    assert m.records(ev.TurnFinished(stop_reason="end_turn", turns=3)) == [TurnRecord(3, True, "end_turn")]
    assert m.records(ev.TextDelta("x")) == []

