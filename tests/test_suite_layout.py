"""The suite's own layout: shared helpers live in helper modules (tests/agent_helpers.py,
tests/log_helpers.py, tests/<area>/*_helpers.py, ...), so no test module imports another. Importing
from a test_* module runs its module body, couples two files' tests and makes the importer depend on
the other's fixtures; this check fails listing every such import."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _is_test_module(dotted: str) -> bool:
    return any(part.startswith("test_") or part.endswith("_test") for part in dotted.split("."))


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of every module an import statement in `path` names, relative imports resolved."""
    package = ".".join(path.relative_to(TESTS.parent).with_suffix("").parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parent, base] if base else parent)
            found.append((node.lineno, base))
            if not _is_test_module(base):   # `from tests.app import test_watch` names the module as a name
                found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def test_no_test_module_imports_another():
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for line, name in _imported_modules(path):
            if name.split(".")[0] == "tests" and _is_test_module(name):
                offenders.append(f"{path.relative_to(TESTS.parent)}:{line}: imports {name}")
    assert not offenders, ("move the shared helpers into a helper module (not named test_*):\n"
                           + "\n".join(offenders))


def test_the_check_sees_every_form_of_import(monkeypatch):
    sample = TESTS / "app" / "sample_for_layout_check.py"
    text = ("import tests.app.test_a\n"
            "from tests.app.test_b import x\n"
            "from tests.app import test_c\n"
            "from . import test_d\n"
            "from .test_e import y\n"
            "def f():\n    from tests.app.tui_helpers import make_app\n")
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: text)
    names = [n for _, n in _imported_modules(sample) if _is_test_module(n)]
    assert {"tests.app.test_a", "tests.app.test_b", "tests.app.test_c", "tests.app.test_d",
            "tests.app.test_e"} <= set(names)
    assert not any("tui_helpers" in n for n in names)
