"""What the demo model's tests share: a tiny workspace, a tool runner in plain Python, a tiny loop.

Tool calls are executed here with a few lines of plain Python (the real tools and loop live
elsewhere and are not imported). The tests are in test_demo_model.py (answers and exploration),
test_demo_tasks.py (writes, edits, folders, compaction) and test_demo_usage.py (usage, cache, limits).
"""
from __future__ import annotations

import fnmatch
import os
import re
import shlex
from pathlib import Path

from agent_core.providers.demo.model import DemoModel
from agent_core.events import TextDelta
from agent_core.providers.model import ModelResponse
from agent_core.tool_spec import TOOL_NAMES
from compaction.validate import validate_history

REPO = Path(__file__).resolve().parents[3]
TOOLS = [{"name": n, "description": f"the {n} tool", "input_schema": {"type": "object"}} for n in TOOL_NAMES]
SYSTEM = "You are a careful coding agent working in the user's repository. " * 70
SUMMARY_ASK = "Summarize the conversation so far in the nine sections, analysis first."

# name -> (required keys with types, optional keys with types)
SCHEMA = {
    "bash": ({"command": str}, {"timeout": (int, float)}),
    "read_file": ({"path": str}, {"offset": int, "limit": int}),
    "write_file": ({"path": str, "content": str}, {}),
    "edit_file": ({"path": str, "old_string": str, "new_string": str}, {}),
    "glob": ({"pattern": str}, {}),
    "grep": ({"pattern": str}, {"path": str, "glob": str}),
    "compact": ({}, {"focus": str}),
}


def check_input(name: str, inp: dict) -> None:
    req, opt = SCHEMA[name]
    for k, t in req.items():
        assert isinstance(inp.get(k), t) and (k == "content" or inp[k]), (name, inp)
    for k, v in inp.items():
        assert k in req or k in opt, (name, inp)
        if k in opt:
            assert isinstance(v, opt[k]) and not isinstance(v, bool), (name, inp)
    if name == "read_file":
        assert inp.get("offset", 1) >= 1 and inp.get("limit", 1) >= 1
    if name == "grep":
        re.compile(inp["pattern"])
    if "path" in inp:
        assert not os.path.isabs(inp["path"]) and ".." not in inp["path"].split("/")


# ---- a tiny workspace and a tiny tool runner ------------------------------------------------

def _module(name: str, n: int) -> str:
    body = [f'"""The {name} module: helpers for {name} handling."""', "", "import math", ""]
    for i in range(n):
        body += [f"def {name}_step_{i}(value):", f'    """Step {i} of the {name} pipeline."""',
                 f"    total = value * {i + 1}", "    return math.floor(total)", "", ""]
    body += [f"class {name.title()}Store:", "    def __init__(self):", "        self.items = []", ""]
    return "\n".join(body)


def demo_workspace(tmp_path: Path) -> Path:
    """A small project in `tmp_path` (each test file's `ws` fixture): a README, docs, ten modules
    under src/, a test, and a hidden folder the demo must not look in."""
    files = {
        "README.md": "# Demo project\n\nA small project to explore.\n\n## Usage\n\nRun `python -m src.app`.\n",
        "docs/guide.md": "# Guide\n\n## Tokens\n\nHow tokens are counted.\n\n## Cache\n\nPrefix caching.\n",
        "pyproject.toml": "[project]\nname = 'demo'\n\n[tool.pytest]\naddopts = '-q'\n",
        "tests/test_app.py": "from src.app import app_step_0\n\n\ndef test_step():\n    assert app_step_0(1) == 0\n",
    }
    for name, n in [("app", 6), ("tokens", 9), ("cache", 7), ("config", 5), ("util", 4), ("parser", 8),
                    ("render", 6), ("session", 5), ("budget", 7), ("storage", 6)]:
        files[f"src/{name}.py"] = _module(name, n)
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "secret.py").write_text("x = 1\n")
    return tmp_path


def _walk(root: Path):
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x not in ("__pycache__", ".venv"))
        for f in sorted(files):
            yield os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")


class Runner:
    """Executes tool calls with plain Python: read-only tools, a fake `ls`/`wc -l`, and writes only if allowed."""

    def __init__(self, root: Path, allow_writes: bool = False, fail: set[str] = frozenset()) -> None:
        self.root, self.allow_writes, self.fail = root, allow_writes, set(fail)
        self.log: list[tuple[str, dict, bool]] = []

    def __call__(self, name: str, inp: dict) -> tuple[str, bool]:
        out, err = self._run(name, inp)
        self.log.append((name, inp, err))
        return out, err

    def _run(self, name: str, inp: dict) -> tuple[str, bool]:
        if name in self.fail:
            self.fail.discard(name)
            return f"Error: {name} failed on purpose", True
        if name == "glob":
            pat = inp["pattern"]
            hits = [r for r in _walk(self.root) if fnmatch.fnmatch(r, pat)
                    or (pat.startswith("**/") and fnmatch.fnmatch(r, pat[3:]))]
            return "\n".join(hits) or "No files matched", False
        if name == "read_file":
            p = self.root / inp["path"]
            if not p.is_file():
                return f"Error: no such file: {inp['path']}", True
            lines = p.read_text().splitlines()
            start = inp.get("offset", 1)
            part = lines[start - 1:start - 1 + inp.get("limit", 2000)]
            return "\n".join(f"{i:6}\t{ln}" for i, ln in enumerate(part, start)), False
        if name == "grep":
            rx = re.compile(inp["pattern"])
            hits = [f"{r}:{i}:{ln}" for r in _walk(self.root)
                    if not inp.get("glob") or fnmatch.fnmatch(r.rsplit("/", 1)[-1], inp["glob"])
                    for i, ln in enumerate((self.root / r).read_text().splitlines(), 1) if rx.search(ln)]
            return "\n".join(hits[:50]) or "No matches", False
        if name == "bash":
            argv = shlex.split(inp["command"])
            if argv[:1] == ["ls"]:
                return "\n".join(sorted(os.listdir(self.root))), False
            if argv[:2] == ["wc", "-l"]:
                return "\n".join(f"{len((self.root / a).read_text().splitlines())} {a}" for a in argv[2:]), False
            return f"Error: command not available here: {argv[0]}", True
        if name in ("write_file", "edit_file") and self.allow_writes:
            p = self.root / inp["path"]
            if name == "write_file":
                p.write_text(inp["content"])
                return f"Wrote {len(inp['content'])} characters to {inp['path']}", False
            text = p.read_text()
            if text.count(inp["old_string"]) != 1:
                return "Error: old_string must match exactly once", True
            p.write_text(text.replace(inp["old_string"], inp["new_string"]))
            return f"Edited {inp['path']}", False
        if name == "compact":
            return "Compaction scheduled after this tool batch.", False
        return f"Error: {name} is not allowed", True


async def call(model: DemoModel, messages: list[dict], tools=TOOLS, max_tokens: int = 4_000,
               purpose: str = "main") -> tuple[list[str], ModelResponse]:
    deltas: list[str] = []
    items = []
    async for item in model.stream(system=SYSTEM, messages=messages, tools=tools, max_tokens=max_tokens,
                                   purpose=purpose):
        items.append(item)
        if isinstance(item, TextDelta):
            deltas.append(item.text)
    assert isinstance(items[-1], ModelResponse) and all(isinstance(i, TextDelta) for i in items[:-1])
    return deltas, items[-1]


async def turn(model: DemoModel, messages: list[dict], prompt: str, run: Runner, tools=TOOLS,
               max_rounds: int = 10) -> list[ModelResponse]:
    """One prompt through a tiny loop; appends to `messages` in place."""
    messages.append({"role": "user", "content": [{"type": "text", "text": prompt}]})
    responses = []
    for _ in range(max_rounds):
        assert validate_history(messages) == []
        _, resp = await call(model, messages, tools)
        responses.append(resp)
        messages.append({"role": "assistant", "content": resp.content})
        uses = [b for b in resp.content if b["type"] == "tool_use"]
        if resp.stop_reason != "tool_use":
            assert not uses
            return responses
        results = []
        for b in uses:
            out, err = run(b["name"], b["input"])
            results.append({"type": "tool_result", "tool_use_id": b["id"], "content": out,
                            **({"is_error": True} if err else {})})
        messages.append({"role": "user", "content": results})
    raise AssertionError("the demo never ended its turn")


def calls_of(responses: list[ModelResponse]) -> list[dict]:
    return [b for r in responses for b in r.content if b["type"] == "tool_use"]
