"""The summary call's progress as events: started, each piece of text, ended (ok or why not)."""
from __future__ import annotations

import pytest

from agent_core import events as ev
from agent_core.loop.summarizer_adapter import ModelSummarizer
from agent_core.providers.model import ModelError, ModelInfo, ModelResponse
from compaction.summarizer import SummarizeError


class Scripted:
    """A model client whose stream yields the given items (an exception is raised where it sits)."""

    def __init__(self, *items) -> None:
        self.items = items
        self.info = ModelInfo(provider="test", model="m", context_window=50_000, max_output_tokens=8_000)

    async def stream(self, **_kw):
        for it in self.items:
            if isinstance(it, Exception):
                raise it
            yield it


MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "summarize please"}]}]


async def test_text_streams_as_deltas_between_start_and_end():
    said: list[ev.Event] = []
    calls: list[ev.ModelCall] = []
    done = ModelResponse(id="r1", model="m", content=[{"type": "text", "text": "the gist"}], usage={"output_tokens": 3})
    s = ModelSummarizer(Scripted(ev.TextDelta("the "), ev.TextDelta("gist"), done), calls.append, emit=said.append)
    result = await s.summarize(MESSAGES)
    assert result.text == "the gist"
    assert [type(e) for e in said] == [ev.CompactionStarted, ev.CompactionDelta, ev.CompactionDelta,
                                       ev.CompactionEnded]
    assert "".join(e.text for e in said if isinstance(e, ev.CompactionDelta)) == "the gist"
    end = said[-1]
    assert end.ok and end.chars == len("the gist") and end.duration_s >= 0
    assert calls and calls[0].purpose == "compaction" and 0 <= calls[0].duration_s <= end.duration_s


async def test_a_failed_call_ends_the_block_with_the_reason():
    said: list[ev.Event] = []
    s = ModelSummarizer(Scripted(ev.TextDelta("par"), ModelError("overloaded", "The API is overloaded")),
                        lambda c: None, emit=said.append)
    with pytest.raises(SummarizeError):
        await s.summarize(MESSAGES)
    assert isinstance(said[-1], ev.CompactionEnded) and not said[-1].ok
    assert said[-1].message == "The API is overloaded"


async def test_no_emit_no_events():
    done = ModelResponse(id="r1", model="m", content=[{"type": "text", "text": "x"}], usage={})
    s = ModelSummarizer(Scripted(done), lambda c: None)
    assert (await s.summarize(MESSAGES)).text == "x"


class Recording(Scripted):
    """A client that answers each call with the next item and records the max_tokens asked for."""

    def __init__(self, *items) -> None:
        super().__init__()
        self.queue, self.asked = list(items), []

    async def stream(self, **kw):
        self.asked.append(kw["max_tokens"])
        it = self.queue.pop(0)
        if isinstance(it, Exception):
            raise it
        yield it


async def test_the_summary_leaves_the_estimate_margin_beside_max_tokens():
    big = [{"role": "user", "content": [{"type": "text", "text": "w " * 180_000}]}]     # ~45k of a 50k window
    done = ModelResponse(id="r1", model="m", content=[{"type": "text", "text": "gist"}], usage={})
    client = Recording(done)
    s = ModelSummarizer(client, lambda c: None, count=lambda m: 45_000)
    await s.summarize(big)
    assert client.asked == [50_000 - 45_000 - 900]          # 2% of the count kept free, as the main call does
