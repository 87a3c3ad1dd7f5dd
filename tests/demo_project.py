"""A fixed project for tests of the demo model over many turns: what the demo reads depends on the
files it finds, so a test over this repository changes with its files. This one never changes:
packages named after what the demo's tour asks about, each module a few hundred deterministic lines."""
from __future__ import annotations

from pathlib import Path

TOPICS = {
    "compaction": ["compaction", "snip", "microcompact", "collapse", "summary", "breakers", "budget", "cache"],
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
