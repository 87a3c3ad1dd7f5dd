"""Benchmark of the conversation view (issue 6). Prints times and ratios; nothing is asserted.

1. Append: time to add one message to an empty conversation and to one already holding N messages.
2. Stream: time to stream C chunks of assistant text into a conversation holding N messages
   through Textual's MarkdownStream (what the app does), against a baseline in the same run that
   re-renders the whole markdown document for every chunk (`Markdown.update(text_so_far)`).

Usage: .venv/bin/python bench/tui.py [--messages 2000] [--chunks 2000]
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.app import App, ComposeResult  # noqa: E402

from app.tui.widgets.conversation.assistant_message import AssistantMessage  # noqa: E402
from app.tui.widgets.conversation.container import Conversation  # noqa: E402
from app.tui.widgets.conversation.user_message import UserMessage  # noqa: E402

PARAGRAPH = ("The loop compacted the history: **{i}** rounds were summarised, and the `transcript` "
             "kept every entry. See `compaction/pipeline.py` for the order of layers.\n")


def chunks(n: int) -> list[str]:
    """n pieces of a growing markdown answer: paragraphs, a list and a code block now and then."""
    out = []
    for i in range(n):
        if i % 50 == 0:
            out.append(f"\n\n## Part {i // 50}\n\n")
        elif i % 50 == 20:
            out.append("\n\n```python\ndef step(x):\n    return x + 1\n```\n\n")
        elif i % 10 == 0:
            out.append("\n- item " + str(i))
        else:
            out.append(f"word{i} and some more text ")
    return out


class BenchApp(App):
    def __init__(self, live_limit: int = 150) -> None:
        super().__init__()
        self.live_limit = live_limit

    def compose(self) -> ComposeResult:
        yield Conversation(id="conversation", live_limit=self.live_limit)


async def fill(conv: Conversation, n: int) -> float:
    """n messages through the conversation's own path (which pages out all but `live_limit`)."""
    started = time.perf_counter()
    widgets = []
    for i in range(n):
        widgets.append(UserMessage(f"prompt {i}") if i % 2 == 0 else AssistantMessage(PARAGRAPH.format(i=i)))
    await conv._add(*widgets)
    return time.perf_counter() - started


async def append_time(pilot, conv: Conversation, repeat: int) -> float:
    times = []
    for i in range(repeat):
        started = time.perf_counter()
        await conv.add_user(f"one more prompt {i}")
        await pilot.pause()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def stream_time(pilot, conv: Conversation, pieces: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    for p in pieces:
        await conv.append_text(p)
    md = conv.current_markdown
    await conv.end_text()
    await pilot.pause()
    return time.perf_counter() - started, md.source if md else ""


async def baseline_time(pilot, conv: Conversation, pieces: list[str], samples: int) -> tuple[float, str, bool]:
    """Re-render the whole document per chunk. With `samples` > 0, only that many evenly spaced
    chunks are timed (each a full re-render at that length) and the total is integrated from them:
    the full baseline takes minutes, its cost per chunk grows with the document."""
    md = AssistantMessage()
    await conv.mount(md)
    n = len(pieces)
    if samples <= 0 or samples >= n:
        started = time.perf_counter()
        text = ""
        for p in pieces:
            text += p
            await md.update(text)
        await pilot.pause()
        return time.perf_counter() - started, md.source, False
    prefix = [0]
    for p in pieces:
        prefix.append(prefix[-1] + len(p))
    full = "".join(pieces)
    points = sorted({round(k * (n - 1) / (samples - 1)) for k in range(samples)})
    cost: list[tuple[int, float]] = []
    for i in points:
        started = time.perf_counter()
        await md.update(full[:prefix[i + 1]])
        cost.append((i, time.perf_counter() - started))
    await pilot.pause()
    total = 0.0   # trapezoid over chunk index
    for (i0, c0), (i1, c1) in zip(cost, cost[1:]):
        total += (c0 + c1) / 2 * (i1 - i0)
    total += cost[0][1]
    return total, md.source, True


async def main(messages: int, n_chunks: int, samples: int) -> None:
    pieces = chunks(n_chunks)
    app = BenchApp()
    async with app.run_test(size=(120, 40)) as pilot:
        conv = app.query_one(Conversation)
        empty_append = await append_time(pilot, conv, 20)
        await conv.clear()
        fill_s = await fill(conv, messages)
        await pilot.pause()
        mounted = len(conv.messages)
        full_append = await append_time(pilot, conv, 20)
        stream_s, streamed = await stream_time(pilot, conv, pieces)
        base_s, rebuilt, estimated = await baseline_time(pilot, conv, pieces, samples)
    # The same append with every message mounted (no paging), to show why the view pages.
    app = BenchApp(live_limit=10**9)
    async with app.run_test(size=(120, 40)) as pilot:
        conv = app.query_one(Conversation)
        await fill(conv, messages)
        await pilot.pause()
        unpaged_append = await append_time(pilot, conv, 5)
    assert streamed == rebuilt == "".join(pieces), "both methods must end with the same document"
    print(f"conversation: {messages:,} messages added in {fill_s:.2f}s ({mounted} mounted, the rest paged out)")
    print(f"append one message: {empty_append * 1000:.1f} ms into an empty conversation, "
          f"{full_append * 1000:.1f} ms into {messages:,} messages "
          f"(ratio {full_append / empty_append:.2f}x); with all {messages:,} mounted: "
          f"{unpaged_append * 1000:.1f} ms (ratio {unpaged_append / empty_append:.2f}x)")
    print(f"stream {n_chunks:,} chunks into {messages:,} messages: MarkdownStream {stream_s:.2f}s "
          f"({stream_s / n_chunks * 1000:.2f} ms/chunk)")
    how = f"estimated from {samples} timed re-renders" if estimated else "measured"
    print(f"baseline, whole markdown re-rendered per chunk: {base_s:.2f}s "
          f"({base_s / n_chunks * 1000:.2f} ms/chunk, {how})")
    print(f"ratio baseline / MarkdownStream: {base_s / stream_s:.1f}x")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--chunks", type=int, default=2000)
    ap.add_argument("--baseline-samples", type=int, default=40,
                    help="time this many evenly spaced full re-renders and integrate (0: run all chunks)")
    a = ap.parse_args()
    asyncio.run(main(a.messages, a.chunks, a.baseline_samples))
