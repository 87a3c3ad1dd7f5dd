"""A fixed project for tests of the demo model over many turns, at a place whose path always has
the same length.

What the demo reads depends on the files it finds, and every count it reports includes the paths
it prints (the workspace in the system prompt, transcripts and session folders in compaction
messages): a test over this repository, or under pytest's numbered temporary folders, would change
with the repository's files and with the machine. This project never changes, and `fixed_place`
puts it and ctxtui's state under `/tmp/ctxtui-demo-XXXXXXXX`, so a long demo session reports the
same figures on every machine. Packages are named after what the demo's tour asks about; on this
project the tour keeps every promise of agent_core/providers/demo/tour.py (checked by the tests).
`copy_checkout` does the same for this repository (docs/demo_session.py)."""
from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

TOPICS = {
    "compaction": ["compaction", "snip", "microcompact", "collapse", "summary", "breakers", "budget", "cache",
                   "pipeline", "rounds", "tokens", "estimate"],
    "loop": ["agent", "turn", "stream", "retry", "cancel", "events"],
    "tools": ["sandbox", "bash", "files", "grep", "permissions", "glob"],
    "pricing": ["costs", "prices", "cache_rates", "tally"],
    "ui": ["widgets", "gauge", "timeline", "conversation", "status"],
    "sessions": ["sessions", "resume", "log", "transcripts"],
}


def _module(pkg: str, name: str, n: int) -> str:
    lines = [f'"""{name} for the {pkg} package: how {name} works and where it is used."""', "",
             "from __future__ import annotations", ""]
    for j in range(n):
        lines += [f"class {name.title().replace('_', '')}Step{j}:",
                  f'    """Step {j} of {name}: keeps the {pkg} {name} state between calls."""',
                  "",
                  "    def run(self, value: int) -> int:",
                  f"        # {name} step {j}: the {pkg} layer adds {j} and checks the limit",
                  f"        return value + {j} if value < {100 + j} else value",
                  ""]
    return "\n".join(lines) + "\n"


def build(root: Path) -> Path:
    """Write the project under `root/project` and return its path."""
    ws = root / "project"
    for pkg, names in TOPICS.items():
        (ws / pkg).mkdir(parents=True, exist_ok=True)
        (ws / pkg / "__init__.py").write_text(f'"""The {pkg} package."""\n')
        for i, name in enumerate(names):
            (ws / pkg / f"{name}.py").write_text(_module(pkg, name, 24 + 7 * i))
    (ws / "tests").mkdir(exist_ok=True)
    for pkg, names in TOPICS.items():
        body = "".join(f"def test_{name}_{k}():\n    assert {k} + 1 == {k + 1}\n\n" for name in names for k in range(6))
        (ws / "tests" / f"test_{pkg}.py").write_text(body)
    (ws / "README.md").write_text("# Sample agent\n\n" + "".join(
        f"## {pkg}\n\n" + "".join(f"- `{pkg}/{n}.py`: {n} of the {pkg} layer\n" for n in names) + "\n"
        for pkg, names in TOPICS.items()))
    return ws


@contextlib.contextmanager
def fixed_root() -> Iterator[Path]:
    """A fresh folder whose path always has the same length (/tmp/ctxtui-demo-XXXXXXXX); removed
    afterwards."""
    root = Path(tempfile.mkdtemp(prefix="ctxtui-demo-", dir="/tmp"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def state_env(root: Path) -> dict[str, str]:
    """ctxtui's state and config folders under `root`."""
    return {"CTXTUI_HOME": str(root / "state"), "XDG_STATE_HOME": str(root / "xdg"),
            "XDG_CONFIG_HOME": str(root / "config")}


@contextlib.contextmanager
def fixed_place() -> Iterator[tuple[Path, dict[str, str]]]:
    """(this project, the environment for ctxtui's state) at a fixed-length place."""
    with fixed_root() as root:
        yield build(root), state_env(root)


def copy_checkout(src: Path, root: Path) -> Path:
    """The files git tracks in `src` (every file but the usual build and cache folders when it is
    not a git checkout), copied to `root/project`: the repository as a fresh clone has it."""
    ws = root / "project"
    try:
        out = subprocess.run(["git", "-C", str(src), "ls-files", "-z"], capture_output=True, check=True)
        names = [n for n in out.stdout.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
    if not names:
        junk = shutil.ignore_patterns(".*", "__pycache__", "*.egg-info", "snapshot_report.html")
        shutil.copytree(src, ws, ignore=junk)
        return ws
    for name in names:
        if (src / name).is_file():
            (ws / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / name, ws / name)
    return ws
