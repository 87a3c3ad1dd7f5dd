"""Benchmark of the conversation view (issues 6 and 23). Prints figures and ratios against baselines
measured in the same run; nothing is asserted.

1. Append: time to add one message to an empty conversation and to one already holding N messages.
2. Stream: time to stream C chunks of assistant text into a conversation holding N messages
   as the app does (gathered, appended and rendered again at most every TEXT_FLUSH_S), against a
   baseline in the same run that renders the whole answer again for every chunk.
3. Append CPU (time.process_time) of a user message and of a tool block, with the frame that shows
   it, into a conversation holding M messages (5,000), against a bare Textual app (a VerticalScroll
   of Statics) holding as many children, and one holding a single Static (the conversation is one
   widget).
4. Soak (only with --turns T): the real app (build_app on the offline demo model, 120×40) runs T
   prompts, each typed and sent with Enter; it prints CPU per turn and RSS at turns 10, 50, 100,
   500, 1000 (those up to T), the same turn's CPU headless and through the Agent alone, and the
   ratios. The headless turns run in a child process in step with the TUI's (turn N of both at the
   same moment of the run).

Usage: .venv/bin/python bench/tui.py [--messages 2000] [--chunks 2000] [--append-messages 5000]
       .venv/bin/python bench/tui.py --turns 1000     # the soak alone; about 2 minutes per 1,000 turns
                                                      # on the demo model (the old view: ~1 hour)
The default run (no --turns) takes about a minute and a half.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Awaitable, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual._wait import wait_for_idle  # noqa: E402
from textual.app import App, ComposeResult  # noqa: E402
from textual.containers import VerticalScroll  # noqa: E402
from textual.widgets import Static  # noqa: E402

from app.tui.widgets.conversation.answer_record import AssistantRecord  # noqa: E402
from app.tui.widgets.conversation.assistant_message import answer_lines  # noqa: E402
from app.tui.widgets.conversation.container import Conversation  # noqa: E402
from app.tui.widgets.conversation.user_message import UserRecord  # noqa: E402

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
    """The conversation alone; `live_limit` None: the conversation's own paging limits."""

    def __init__(self, live_limit: int | None = None, **kw) -> None:
        super().__init__()
        self.kw = dict(kw, **({"live_limit": live_limit} if live_limit is not None else {}))

    def compose(self) -> ComposeResult:
        yield Conversation(id="conversation", **self.kw)


async def fill(conv: Conversation, n: int) -> float:
    """n messages through the conversation's own path (which pages out all but `live_limit`)."""
    started = time.perf_counter()
    for i in range(n):
        conv._append(UserRecord(f"prompt {i}") if i % 2 == 0 else AssistantRecord(PARAGRAPH.format(i=i)))
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
    return time.perf_counter() - started, md.text if md else ""


async def baseline_time(pilot, conv: Conversation, pieces: list[str], samples: int) -> tuple[float, str, bool]:
    """Re-render the whole document per chunk. With `samples` > 0, only that many evenly spaced
    chunks are timed (each a full re-render at that length) and the total is integrated from them:
    the full baseline takes minutes, its cost per chunk grows with the document."""
    look, width = conv._make_look(), conv._width
    source = ""
    n = len(pieces)
    if samples <= 0 or samples >= n:
        started = time.perf_counter()
        for p in pieces:
            source += p
            answer_lines(look, source, width)
        await pilot.pause()
        return time.perf_counter() - started, source, False
    prefix = [0]
    for p in pieces:
        prefix.append(prefix[-1] + len(p))
    full = "".join(pieces)
    points = sorted({round(k * (n - 1) / (samples - 1)) for k in range(samples)})
    cost: list[tuple[int, float]] = []
    for i in points:
        started = time.perf_counter()
        source = full[:prefix[i + 1]]
        answer_lines(look, source, width)
        cost.append((i, time.perf_counter() - started))
    await pilot.pause()
    total = 0.0   # trapezoid over chunk index
    for (i0, c0), (i1, c1) in zip(cost, cost[1:]):
        total += (c0 + c1) / 2 * (i1 - i0)
    total += cost[0][1]
    return total, source, True


async def view_bench(messages: int, n_chunks: int, samples: int) -> None:
    pieces = chunks(n_chunks)
    app = BenchApp()
    async with app.run_test(size=(120, 40)) as pilot:
        conv = app.query_one(Conversation)
        empty_append = await append_time(pilot, conv, 20)
        await conv.clear()
        fill_s = await fill(conv, messages)
        await pilot.pause()
        mounted = len(conv.messages)   # drawn; the rest are paged out
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
    print(f"conversation: {messages:,} messages added in {fill_s:.2f}s ({mounted} drawn, the rest paged out)")
    print(f"append one message: {empty_append * 1000:.1f} ms into an empty conversation, "
          f"{full_append * 1000:.1f} ms into {messages:,} messages "
          f"(ratio {full_append / empty_append:.2f}x); with all {messages:,} drawn: "
          f"{unpaged_append * 1000:.1f} ms (ratio {unpaged_append / empty_append:.2f}x)")
    print(f"stream {n_chunks:,} chunks into {messages:,} messages: gathered per flush {stream_s:.2f}s "
          f"({stream_s / n_chunks * 1000:.2f} ms/chunk)")
    how = f"estimated from {samples} timed re-renders" if estimated else "measured"
    print(f"baseline, whole markdown re-rendered per chunk: {base_s:.2f}s "
          f"({base_s / n_chunks * 1000:.2f} ms/chunk, {how})")
    print(f"ratio baseline / gathered: {base_s / stream_s:.1f}x")


# ---- 3. append CPU at N messages against a bare Textual app ---------------------------------------

class BareApp(App):
    """The baseline: a plain scrolling container of `n` Statics, nothing of ctxtui's."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="bare"):
            for i in range(self.n):
                yield Static(f"prompt {i}")


async def frame(app: App) -> None:
    """Let the app finish what an append started and draw it, as its 60 fps update timer would:
    the queued messages, then the screen's layout and paint, then what those posted (Resize, Show).
    Unlike `pilot.pause()` it does not visit every widget (that visit costs the harness, not the app)."""
    await wait_for_idle(0)
    app.screen._on_timer_update()
    await wait_for_idle(0)


async def cpu_of(app: App, step: Callable[[int], Awaitable[None]], repeat: int) -> float:
    """Median CPU seconds (time.process_time) of `step(i)` and the frame that shows it."""
    times = []
    for i in range(repeat):
        started = time.process_time()
        await step(i)
        await frame(app)
        times.append(time.process_time() - started)
    return statistics.median(times)


async def append_cpu(messages: int, repeat: int) -> dict[str, float]:
    """CPU of one append into a conversation holding `messages` (the conversation's own paging),
    into a bare Textual app holding as many Statics, and into one holding as many as the
    conversation keeps mounted."""
    out: dict[str, float] = {}
    app = BenchApp()
    async with app.run_test(size=(120, 40)) as pilot:
        conv = app.query_one(Conversation)
        await frame(app)
        out["empty_user"] = await cpu_of(app, lambda i: conv.add_user(f"one more prompt {i}"), repeat)
        await conv.clear()
        await fill(conv, messages)
        await frame(app)

        async def tool(i: int) -> None:
            await conv.add_tool_call(f"b{i}", "bash", {"command": f"grep -rn step{i} ."})
            conv.set_tool_result(f"b{i}", f"compaction/pipeline.py:{i}: step{i}\n" * 8, 300, False)

        out["user"] = await cpu_of(app, lambda i: conv.add_user(f"one more prompt {i}"), repeat)
        out["tool"] = await cpu_of(app, tool, repeat)
        out["mounted_widgets"] = 1 + len(list(conv.walk_children()))   # the conversation is one widget
        out["mounted_messages"] = len(conv.messages)
        await pilot.pause()
    # The bare app holding every message lays them all out on each append (about a second at
    # 5,000): a few appends give its median.
    for key, n, times in (("bare", messages, max(3, repeat // 6)),
                          ("bare_mounted", int(out["mounted_widgets"]), repeat)):
        bare = BareApp(n)
        async with bare.run_test(size=(120, 40)) as pilot:
            scroll = bare.query_one(VerticalScroll)
            scroll.anchor()
            await frame(bare)
            out[key] = await cpu_of(bare, lambda i, s=scroll: s.mount(Static(f"one more prompt {i}")), times)
            await pilot.pause()
    return out


def report_append(messages: int, r: dict[str, float]) -> None:
    ms = {k: v * 1000 for k, v in r.items()}
    print(f"append CPU (time.process_time, median, with its frame), {messages:,} messages held, "
          f"{int(r['mounted_messages'])} drawn ({int(r['mounted_widgets'])} widget):")
    print(f"  conversation: user message {ms['user']:.1f} ms, tool block {ms['tool']:.1f} ms "
          f"(empty conversation: {ms['empty_user']:.1f} ms)")
    print(f"  bare Textual app, {messages:,} Statics: {ms['bare']:.1f} ms  → user {ms['user'] - ms['bare']:+.1f} ms, "
          f"tool {ms['tool'] - ms['bare']:+.1f} ms ({r['user'] / r['bare']:.2f}x, {r['tool'] / r['bare']:.2f}x)")
    print(f"  bare Textual app, {int(r['mounted_widgets'])} Static (as many widgets as the conversation): "
          f"{ms['bare_mounted']:.1f} ms  → user {ms['user'] - ms['bare_mounted']:+.1f} ms, "
          f"tool {ms['tool'] - ms['bare_mounted']:+.1f} ms")


# ---- 4. soak: the real app on the demo model, turn after turn ------------------------------------

SOAK_PROMPTS = ("explore this repository", "how does compaction work?", "what does the agent loop do?",
                "explain the tools and the sandbox", "how are costs computed?", "describe the TUI widgets",
                "how are sessions saved and resumed?", "what do the tests cover?", "how is the cache priced?",
                "what are the breakers?")
SOAK_MARKS = (1, 10, 50, 100, 200, 500, 1000, 2000, 5000)


def soak_prompt(i: int) -> str:
    return f"{SOAK_PROMPTS[i % len(SOAK_PROMPTS)]} ({i + 1})"


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def window_mean(per_turn: list[float], turn: int, width: int = 10) -> float:
    """Mean CPU of the `width` turns ending at `turn` (1-based): one turn alone is noisy (a turn
    with a compaction costs more in both front-ends)."""
    part = per_turn[max(0, turn - width):turn]
    return statistics.mean(part) if part else float("nan")


async def _headless_turns(prompts: "asyncio.Queue[int | None]", report) -> None:
    """The same prompts headless, as each is asked for: CPU of what `ctxtui --headless` runs for a
    turn (its context event, the events shown in the text format, its cost event, written to
    /dev/null) and of the Agent's events alone (a second agent on its own copy of the project)."""
    from agent_core.config import load_config
    from agent_core.loop.factory import build_agent
    from app.cli.headless import StopSignals, _Output, _turn
    from tests.demo_project import fixed_place

    with fixed_place() as (ws, env), fixed_place() as (ws2, env2), open(os.devnull, "w") as sink:
        printed = build_agent(load_config({"model": "demo", "allow": ["all"]}, environ=env, workspace=ws))
        alone = build_agent(load_config({"model": "demo", "allow": ["all"]}, environ=env2, workspace=ws2))
        output, signals = _Output("text", sink, sink), StopSignals()
        while (i := await prompts.get()) is not None:
            started = time.process_time()
            output.new_turn()
            await _turn(printed, soak_prompt(i), output, signals)
            middle = time.process_time()
            async for _ in alone.run(soak_prompt(i)):
                pass
            report(middle - started, time.process_time() - middle)
        await printed.aclose()
        await alone.aclose()


def headless_twin() -> None:
    """`--headless-twin`: read turn numbers on stdin, answer each with "printed agent" CPU seconds."""
    async def run() -> None:
        prompts: asyncio.Queue[int | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def report(printed: float, alone: float) -> None:
            sys.stdout.write(f"{printed} {alone}\n")
            sys.stdout.flush()

        async def read() -> None:
            while line := await loop.run_in_executor(None, sys.stdin.readline):
                await prompts.put(int(line))
            await prompts.put(None)

        reader = asyncio.ensure_future(read())
        await _headless_turns(prompts, report)
        await reader
    asyncio.run(run())


class Twin:
    """The headless front-end in a child process, run turn by turn in step with the TUI: turn N of
    both is measured at the same moment of the run. Measured one after the other (a thousand TUI
    turns, then a thousand headless ones), a machine whose speed drifts over those minutes moved
    the ratio by a third."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--headless-twin"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.printed: list[float] = []
        self.alone: list[float] = []

    def turn(self, i: int) -> None:
        """Turn `i` headless, waited for (the TUI's loop stands still meanwhile: nothing of its
        own is measured in that time)."""
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(f"{i}\n")
        answer = self.proc.stdout.readline().split()
        if len(answer) != 2:
            raise RuntimeError(f"the headless twin stopped at turn {i + 1} (exit {self.proc.poll()}; its "
                               f"error is above)")
        printed, alone = answer
        self.printed.append(float(printed))
        self.alone.append(float(alone))

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


async def soak_tui(turns: int, marks: tuple[int, ...],
                   twin: Twin | None = None) -> tuple[list[float], dict[int, float]]:
    """CPU per turn and RSS at `marks` of the real app (build_app, demo model), each prompt typed
    and sent with Enter and waited for through the agent worker (not `pilot.pause()` polling);
    with `twin`, the same turn headless after each."""
    from app.tui.launch import build_app
    from tests.demo_project import fixed_place

    per_turn, rss = [], {}
    with fixed_place() as (ws, env):
        # settled after its first frame as the `ctxtui` command's app is (app/tui/heap.py), and put
        # back when it ends
        app = build_app({"model": "demo", "allow": ["all"]}, environ=env, workspace=ws, claude_root=None,
                        settle_heap=True)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            for i in range(turns):
                started = time.process_time()
                app.fill_prompt(soak_prompt(i))
                await pilot.press("enter")
                await app.workers.wait_for_complete()
                await frame(app)
                per_turn.append(time.process_time() - started)
                if twin is not None:
                    twin.turn(i)
                if i + 1 in marks:
                    gc.collect()
                    rss[i + 1] = rss_mb()
                    print(f"  … turn {i + 1}: {window_mean(per_turn, i + 1) * 1000:.0f} ms CPU, "
                          f"{rss[i + 1]:.0f} MB RSS", file=sys.stderr, flush=True)
    return per_turn, rss


async def soak(turns: int) -> None:
    marks = tuple(m for m in SOAK_MARKS if m <= turns) or (turns,)
    twin = Twin()
    try:
        tui, rss = await soak_tui(turns, marks, twin)
    finally:
        twin.close()
    headless, agent_alone = twin.printed, twin.alone
    print(f"soak: {turns:,} demo turns in the TUI (120×40) and headless, turn by turn in step (the "
          f"headless turn in a child process right after the TUI's); CPU per turn is the mean of the "
          f"10 turns ending at the mark; headless is what `--headless` runs for a turn (text format, "
          f"to /dev/null), agent the Agent's events alone")
    print(f"  {'turn':>6} {'TUI CPU':>9} {'headless':>9} {'agent':>7} {'TUI/headless':>13} {'TUI/agent':>10} "
          f"{'RSS':>8}")
    for m in marks:
        t, h, a = window_mean(tui, m), window_mean(headless, m), window_mean(agent_alone, m)
        print(f"  {m:>6} {t * 1000:>7.0f}ms {h * 1000:>7.0f}ms {a * 1000:>5.0f}ms {t / h:>12.2f}x {t / a:>9.2f}x "
              f"{rss[m]:>6.0f}MB")
    ratios = [t / h for t, h in zip(tui, headless)]
    print(f"  TUI/headless over all {turns:,} turns, turn by turn: median {statistics.median(ratios):.2f}x, "
          f"mean of the whole run {sum(tui) / sum(headless):.2f}x")
    ref = 50 if 50 in marks else marks[0]
    last = marks[-1]
    print(f"  turn {last} against turn {ref}: CPU {window_mean(tui, last) / window_mean(tui, ref):.2f}x, "
          f"RSS {rss[last] / rss[ref]:.2f}x")


async def main(a: argparse.Namespace) -> None:
    if a.turns:
        await soak(a.turns)
        return
    if not a.append_only:
        await view_bench(a.messages, a.chunks, a.baseline_samples)
    report_append(a.append_messages, await append_cpu(a.append_messages, a.repeat))


if __name__ == "__main__":
    if sys.argv[1:] == ["--headless-twin"]:
        headless_twin()
        sys.exit(0)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--chunks", type=int, default=2000)
    ap.add_argument("--baseline-samples", type=int, default=12,
                    help="time this many evenly spaced full re-renders and integrate (0: run all chunks)")
    ap.add_argument("--append-messages", type=int, default=5000, help="messages held for the append CPU figures")
    ap.add_argument("--repeat", type=int, default=20, help="appends timed per figure (the median is printed)")
    ap.add_argument("--append-only", action="store_true", help="run only section 3")
    ap.add_argument("--turns", type=int, default=0,
                    help="run the soak alone: this many demo turns in the real app and headless")
    asyncio.run(main(ap.parse_args()))
