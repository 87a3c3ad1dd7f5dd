"""What the OS sandbox costs a bash call (issue 50): the same commands through the real bash tool,
unconfined (the baseline) and inside bubblewrap, alternately in one run, with no network, with the
host-list proxy (socat relay started per call), and a 30-call series to show the cost stays flat.
Prints the median milliseconds per call each way and their ratio. Usage:
`.venv/bin/python bench/sandbox.py [--calls 30]`. Prints; asserts nothing."""
from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent_core.os_sandbox import probe  # noqa: E402
from agent_core.os_sandbox.sandbox import OsSandbox  # noqa: E402
from agent_core.os_sandbox.settings import SandboxSettings  # noqa: E402
from agent_core.tools import ToolContext, ToolRegistry  # noqa: E402

COMMANDS = {"true": "true", "ls + grep": "ls -la /usr/bin | grep -c py", "python -c": f"{sys.executable} -c 'print(1)'"}


async def timed(ctx: ToolContext, command: str) -> float:
    start = time.perf_counter()
    out = await ToolRegistry().execute("bash", {"command": command}, ctx)
    if out.meta.get("exit_code") != 0:
        raise SystemExit(f"{command!r} failed: {out.content[-300:]}")
    return (time.perf_counter() - start) * 1000


async def main(calls: int) -> None:
    found = probe.check()
    if not found.ok:
        raise SystemExit(found.notice())
    base = Path(tempfile.mkdtemp(prefix="ctxtui-bench-sbx-", dir="/var/tmp"))
    plain = ToolContext(base)
    boxes = {"none": OsSandbox(SandboxSettings(mode="auto-allow"), base)}
    if found.socat:
        boxes["hosts"] = OsSandbox(SandboxSettings(mode="auto-allow", network=("example.com",)), base)
    print(f"bash calls, median of {calls} each, unconfined vs sandboxed (alternating in one run)")
    print(f"{'command':<12}{'unconfined':>12}" + "".join(f"{'sandbox ' + k:>16}{'ratio':>8}" for k in boxes))
    for name, command in COMMANDS.items():
        times: dict[str, list[float]] = {"plain": [], **{k: [] for k in boxes}}
        for _ in range(calls):
            times["plain"].append(await timed(plain, command))
            for k, box in boxes.items():
                times[k].append(await timed(ToolContext(base, os_sandbox=box), command))
        p = statistics.median(times["plain"])
        row = f"{name:<12}{p:>10.1f}ms"
        for k in boxes:
            m = statistics.median(times[k])
            row += f"{m:>14.1f}ms{m / p:>7.2f}×"
        print(row)
        series = times["none"]
        tenth = max(1, len(series) // 10)
        print(f"{'':<12}sandboxed first tenth {statistics.median(series[:tenth]):.1f} ms, "
              f"last tenth {statistics.median(series[-tenth:]):.1f} ms")
    for box in boxes.values():
        box.close()
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=30)
    asyncio.run(main(ap.parse_args().calls))
