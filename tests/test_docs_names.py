"""The guides name only what exists: every slash command, `ctxtui` flag and subcommand, `CTXTUI_*`
variable, key binding and source path a guide (docs/*.md, README.md) names is looked up in the
code, every link between the documents resolves (file and heading), and each guide stays short.

The code is read through its public objects, not its file layout: the flags from `ctxtui --help`
and each subcommand's `--help` (run in-process through `app.cli.main.main`), the slash commands from
`app.tui.commands.COMMANDS`, the variables from `agent_core.config.VARIABLES`, the bindings from
every `Binding(...)` in `app/`. Each checker is a function of a text, so the last tests feed it
bogus names and see it fail."""
from __future__ import annotations

import ast
import contextlib
import io
import re
from functools import cache
from pathlib import Path

import pytest
from textual.app import App
from textual.binding import Binding
from textual.screen import Screen

from agent_core.config import VARIABLES
from app.cli.main import main as ctxtui_main
from app.tui.commands import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GUIDES = sorted(DOCS.glob("*.md"))
NAMING = [*GUIDES, ROOT / "README.md"]                  # the documents whose names are checked
LINKING = [*NAMING, ROOT / "bench" / "HISTORY.md"]       # the documents whose links are checked
GUIDE_MAX_BYTES = 15 * 1024                              # issue 51: no guide over 15 KB ...
DOCS_MAX_BYTES = 100 * 1024                              # ... and docs/ at most 100 KB of Markdown

# Flags of other programs that a guide quotes with their command (git ls-files, ccusage, otelcol).
FOREIGN_FLAGS = frozenset({"--cached", "--others", "--exclude-standard", "--offline", "--config"})
# `/tmp` and its kind are folders, not slash commands.
ROOT_FOLDERS = frozenset({"tmp", "usr", "etc", "proc", "dev", "var", "run", "home", "bin", "opt", "mnt", "sys"})
SOURCE_ROOTS = ("app", "agent_core", "compaction", "tests", "bench", "docs", "styles")

FENCE = re.compile(r"^```.*?^```", re.M | re.S)
SLASH = re.compile(r"(?<![\w./~$<>:-])/([a-z][a-z-]*)(?![\w/-]|\.\w)")
FLAG = re.compile(r"(?<![\w-])--[a-z0-9][a-z0-9-]*")
SUBCOMMAND = re.compile(r"(?:^|[`|]\s*)ctxtui ([a-z][a-z-]+)\b", re.M)   # a command line's first word
VARIABLE = re.compile(r"\bCTXTUI_[A-Z0-9_]*[A-Z0-9]\b")
DOTTED = re.compile(r"[`\"]([a-z]+\.[a-z_]+)[`\"]")
KEY = re.compile(r"\b(?:(Ctrl|Alt|Shift)\+([A-Za-z0-9]+)|F(\d{1,2}))\b")
PATH = re.compile(r"(?<![\w./~$<>-])((?:" + "|".join(SOURCE_ROOTS) + r")/[\w./*-]*)")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


# ---------------------------------------------------------------- what the code has

def _help_of(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            ctxtui_main([*argv, "--help"])
        except SystemExit:
            pass
    return out.getvalue()


@cache
def subcommands() -> frozenset[str]:
    """The subcommands `ctxtui --help` lists (`ctxtui watch [PATH]` ...)."""
    return frozenset(re.findall(r"^\s+ctxtui ([a-z][a-z-]+)\b", _help_of([]), re.M))


@cache
def usage_reports() -> tuple[str, ...]:
    """The reports of `ctxtui usage`, from its synopsis `[daily|weekly|...]`."""
    found = re.search(r"\[((?:[a-z]+\|)+[a-z]+)\]", _help_of(["usage"]))
    return tuple(found.group(1).split("|")) if found else ()


@cache
def ctxtui_flags() -> frozenset[str]:
    """Every flag the `--help` of ctxtui, of each subcommand and of each usage report names."""
    helps = [_help_of([])] + [_help_of([c]) for c in subcommands()] + [_help_of(["usage", r]) for r in usage_reports()]
    return frozenset(f for text in helps for f in FLAG.findall(text))


@cache
def script_flags() -> frozenset[str]:
    """Flags of the repository's own scripts (bench/, docs/) and of modules a guide runs with `python -m`."""
    sources = [*(ROOT / "bench").glob("*.py"), *DOCS.glob("*.py")]
    for doc in NAMING:
        for module in re.findall(r"python -m ([a-z_]+(?:\.[a-z_]+)+)", doc.read_text(encoding="utf-8")):
            path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
            if path.is_file():
                sources.append(path)
    return frozenset(f for s in sources for f in re.findall(r"[\"'](--[a-z0-9][a-z0-9-]*)[\"']", s.read_text()))


@cache
def slash_commands() -> frozenset[str]:
    return frozenset(c.name for c in COMMANDS)


@cache
def variables() -> frozenset[str]:
    """The settings' variables, and the test suite's own switches (tests/conftest.py)."""
    conftest = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    return frozenset(v for v, _, _ in VARIABLES) | frozenset(VARIABLE.findall(conftest))


@cache
def bindings() -> tuple[frozenset[str], frozenset[str]]:
    """(binding ids, keys) of every `Binding(...)` in app/, and the keys Textual binds itself or
    the app handles by name (a key string literal in app/, such as the prompt's "ctrl+j")."""
    ids: set[str] = set()
    keys: set[str] = set()
    for path in (ROOT / "app").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Binding":
                if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    keys.update(k.strip() for k in node.args[0].value.split(","))
                ids.update(k.value.value for k in node.keywords
                           if k.arg == "id" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(
                    r"(?:ctrl|alt|shift)\+[a-z0-9_]+|f\d{1,2}", node.value):
                keys.add(node.value)
    for b in [*App.BINDINGS, *Screen.BINDINGS]:
        keys.update(k.strip() for k in (b.key if isinstance(b, Binding) else b[0]).split(","))
    keys.add(App.COMMAND_PALETTE_BINDING)
    return frozenset(ids), frozenset(keys)


# ---------------------------------------------------------------- what a text names that is not there

def unknown_slash_commands(text: str) -> list[str]:
    return sorted({f"/{n}" for n in SLASH.findall(text) if n not in ROOT_FOLDERS and n not in slash_commands()})


def unknown_flags(text: str) -> list[str]:
    known = ctxtui_flags() | script_flags() | FOREIGN_FLAGS
    return sorted({f for f in FLAG.findall(text) if f not in known})


def unknown_subcommands(text: str) -> list[str]:
    """`ctxtui WORD` in code (a code span or block) names a subcommand."""
    code = FENCE.findall(text) + re.findall(r"`[^`\n]+`", FENCE.sub("", text))
    words = {w for c in code for w in SUBCOMMAND.findall(c)}
    reports = set(usage_reports())
    return sorted(f"ctxtui {w}" for w in words if w not in subcommands() and w not in reports)


def unknown_variables(text: str) -> list[str]:
    return sorted({v for v in VARIABLE.findall(text) if v not in variables()})


def _is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.exists() or path.with_suffix(".py").exists()


def unknown_bindings(text: str) -> list[str]:
    ids, keys = bindings()
    prefixes = {i.split(".")[0] for i in ids}
    named = {d for d in DOTTED.findall(text) if d.split(".")[0] in prefixes and not _is_module(d)}
    wrong = sorted(named - ids)
    for mod, key, f in KEY.findall(text):
        name = f"f{f}" if f else f"{mod.lower()}+{key.lower()}"
        if name not in keys:
            wrong.append(f"{mod}+{key}" if mod else f"F{f}")
    return sorted(set(wrong))


def missing_paths(text: str) -> list[str]:
    missing = set()
    for p in PATH.findall(text):
        p = p.rstrip(".")
        if not (any(ROOT.glob(p)) if "*" in p else (ROOT / p).exists()):
            missing.add(p)
    return sorted(missing)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, blanks as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, title in HEADING.findall(FENCE.sub("", text)):
        s = slug(title)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def broken_links(doc: Path, text: str) -> list[str]:
    broken = []
    for target in LINK.findall(FENCE.sub("", text)):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md":
            if anchor not in anchors(path.read_text(encoding="utf-8")):
                broken.append(target)
    return broken


# ---------------------------------------------------------------- the documents

def _name(doc: Path) -> str:
    return str(doc.relative_to(ROOT))


@pytest.mark.parametrize("doc", NAMING, ids=_name)
def test_every_name_a_guide_gives_exists(doc):
    text = doc.read_text(encoding="utf-8")
    problems = {
        "slash commands not in app/tui/commands.py": unknown_slash_commands(text),
        "flags no --help lists": unknown_flags(text),
        "subcommands ctxtui --help does not list": unknown_subcommands(text),
        "CTXTUI_ variables not in agent_core/config.py": unknown_variables(text),
        "binding ids or keys no Binding declares": unknown_bindings(text),
        "paths that do not exist": missing_paths(text),
    }
    problems = {what: names for what, names in problems.items() if names}
    assert not problems, f"{_name(doc)} names what the code does not have: {problems}"


@pytest.mark.parametrize("doc", LINKING, ids=_name)
def test_every_link_resolves(doc):
    assert broken_links(doc, doc.read_text(encoding="utf-8")) == []


def test_guides_are_short():
    sizes = {g.name: g.stat().st_size for g in GUIDES}
    assert {n: s for n, s in sizes.items() if s > GUIDE_MAX_BYTES} == {}
    assert sum(sizes.values()) <= DOCS_MAX_BYTES, sizes


def test_the_code_is_read():
    """The lookups found what they look for: an empty set would let every name pass."""
    assert {"watch", "usage", "replay", "statusline", "serve", "acp"} <= subcommands()
    assert {"daily", "blocks"} <= set(usage_reports())
    assert {"--headless", "--policy", "--token-limit", "--poll", "--port", "--window"} <= ctxtui_flags()
    assert {"compact", "threshold"} <= slash_commands()
    assert "CTXTUI_HOME" in variables()
    ids, keys = bindings()
    assert "app.sidebar" in ids and {"f2", "ctrl+b", "ctrl+p"} <= keys


# ---------------------------------------------------------------- the checks can fail

def test_a_bogus_name_is_found():
    text = ("Type `/nosuchcommand` or /compact, run `ctxtui --no-such-flag` or `ctxtui nosuchsub`, set "
            "`CTXTUI_NO_SUCH_VAR`, remap `app.no_such_binding` or press Ctrl+Y, read `agent_core/no_such.py`.")
    assert unknown_slash_commands(text) == ["/nosuchcommand"]
    assert unknown_flags(text) == ["--no-such-flag"]
    assert unknown_subcommands(text) == ["ctxtui nosuchsub"]
    assert unknown_variables(text) == ["CTXTUI_NO_SUCH_VAR"]
    assert unknown_bindings(text) == ["Ctrl+Y", "app.no_such_binding"]
    assert missing_paths(text) == ["agent_core/no_such.py"]


def test_what_exists_passes():
    text = ("`/compact --preview`, `/tmp`, `ctxtui usage daily --breakdown`, `CTXTUI_HOME`, `app.sidebar` (F2), "
            "Ctrl+J, `agent_core/config.py`, `agent_core/logs/trajectory*.py`, http://x.example/v1/traces.")
    assert (unknown_slash_commands(text), unknown_flags(text), unknown_subcommands(text), unknown_variables(text),
            unknown_bindings(text), missing_paths(text)) == ([], [], [], [], [], [])


def test_a_broken_link_is_found(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("# Title: one\n\n## `Code` here\n")
    (tmp_path / "b.md").write_text("# B\n")
    text = "[ok](#title-one) [ok](#code-here) [ok](b.md#b) [bad](#nope) [bad](b.md#nope) [bad](c.md) [web](https://x)"
    assert broken_links(doc, text) == ["#nope", "b.md#nope", "c.md"]
