"""The file history's cost per change, flat in the session's length (issue 28: changed files,
/diff, /rewind's restore).

A session of --prompts prompts, each editing --files-per-prompt of --files files (200 lines each)
through the real edit_file tool, with the file history on and, in the same run, off (the baseline).
Prints the time per edit both ways and their ratio, the first tenth against the last tenth (flat:
~1.0), the changed-files list's time after each edit (the side pane asks after every write or
edit; cached per file), /diff's time at the end, and the history folder's bytes. Then the count
of one edit of a file of --repeated-lines identical lines, by the changed files list and by the
difflib matcher it used before (quadratic there), measured in the same run, and their ratio.
Usage: `.venv/bin/python bench/file_history.py [--prompts 1000] [--files 50] [--repeated-lines 5000]`.
Prints; asserts nothing.
"""
from __future__ import annotations

import argparse
import asyncio
import difflib
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent_core.tools.base import ToolContext  # noqa: E402
from agent_core.tools.changed_files import ChangedFiles, _counts, session_diff  # noqa: E402
from agent_core.tools.edit_file import EditFileTool  # noqa: E402
from agent_core.tools.file_history import FileHistory  # noqa: E402


def make_files(ws: Path, n: int) -> None:
    for i in range(n):
        (ws / f"m{i}.py").write_text("".join(f"line_{j} = {j}  # of module {i}\n" for j in range(200)))


async def session(base_ws: Path, ws: Path, hist: Path, prompts: int, files: int, per_prompt: int):
    """The same edits on two copies, alternately: without the history (the baseline) and with it.
    Per-edit seconds of each, per-list seconds, the history."""
    history = FileHistory(hist)
    plain, kept = ToolContext(base_ws), ToolContext(ws, history=history)
    changed = ChangedFiles(history)
    tool = EditFileTool()
    base, edits, lists = [], [], []
    done = [0] * files              # edits per file so far: each edit takes the file's next line
    for p in range(prompts):
        history.checkpoint(f"prompt-{p}")
        for k in range(per_prompt):
            i = (p * per_prompt + k) % files
            line, done[i] = done[i] % 200, done[i] + 1
            edit = {"path": f"m{i}.py", "old_string": f"line_{line} = ", "new_string": f"line_{line}_v{p} = "}
            for ctx, out in ((plain, base), (kept, edits)):
                t = time.perf_counter()
                await tool.run(edit, ctx)
                out.append(time.perf_counter() - t)
            t = time.perf_counter()
            changed.files()
            lists.append(time.perf_counter() - t)
    return base, edits, lists, history


def old_counts(before: list[str], after: list[str]) -> tuple[int, int]:
    """The count as it was until the attacker review: difflib's matcher without its junk heuristic."""
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed


def repeated_lines(n: int) -> None:
    """One edit of a file of `n` identical lines, counted both ways (seconds, and the figures)."""
    before = ["    pass"] * n
    after = list(before)
    after[n // 2] = "    return 1"
    took, figures = {}, {}
    for name, count in (("now", _counts), ("before", old_counts)):
        t = time.perf_counter()
        figures[name] = count(before, after)
        took[name] = time.perf_counter() - t
    print(f"one edit of {n:,} identical lines counted in {took['now'] * 1e3:.2f} ms {figures['now']}, by the old "
          f"difflib count in {took['before']:.2f} s {figures['before']}: {took['before'] / took['now']:,.0f}x")


def tenth(xs: list[float], last: bool) -> float:
    n = max(1, len(xs) // 10)
    part = xs[-n:] if last else xs[:n]
    return sorted(part)[len(part) // 2]


async def main(a: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base_ws, ws = Path(tmp) / "base", Path(tmp) / "ws"
        for d in (base_ws, ws):
            d.mkdir()
            make_files(d, a.files)
        base, with_h, lists, history = await session(base_ws, ws, Path(tmp) / "hist", a.prompts, a.files,
                                                     a.per_prompt)
        t = time.perf_counter()
        diff = session_diff(history)
        diff_s = time.perf_counter() - t
        size = sum(f.stat().st_size for f in (Path(tmp) / "hist").iterdir())
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    n = len(with_h)
    print(f"{a.prompts} prompts, {n} edits over {a.files} files of 200 lines")
    print(f"edit_file, median per edit: {med(base) * 1e3:.2f} ms without the history (baseline), "
          f"{med(with_h) * 1e3:.2f} ms with it: {med(with_h) / med(base):.2f}x")
    for name, xs in (("without it", base), ("with it", with_h)):
        print(f"{name}, first tenth {tenth(xs, False) * 1e3:.2f} ms, last tenth {tenth(xs, True) * 1e3:.2f} ms: "
              f"{tenth(xs, True) / tenth(xs, False):.2f}x (flat: ~1)")
    print(f"changed files list after an edit: median {med(lists) * 1e3:.2f} ms, first tenth "
          f"{tenth(lists, False) * 1e3:.2f} ms, last tenth {tenth(lists, True) * 1e3:.2f} ms")
    print(f"/diff at the end: {diff_s * 1e3:.0f} ms for {diff.count(chr(10)):,} lines; history folder "
          f"{size / 1e6:.1f} MB ({len(history.copies):,} copies)")
    repeated_lines(a.repeated_lines)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prompts", type=int, default=1000)
    p.add_argument("--files", type=int, default=50)
    p.add_argument("--per-prompt", type=int, default=2)
    p.add_argument("--repeated-lines", type=int, default=5_000, help="the old count takes ~3 s at 5,000, "
                   "~110 s at 30,000 (quadratic)")
    asyncio.run(main(p.parse_args()))
