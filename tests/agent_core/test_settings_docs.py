"""docs/configuration.md's settings table says what agent_core/settings_table.py says: a row for
every setting, with its flag, its variables, its default and the † of a setting a workspace's .env
may set only once trusted; no row for a key, flag or variable that does not exist. The checker is a
function of the text, so the last tests feed it bogus rows and see it fail."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_core.security.trust import SENSITIVE
from agent_core.settings_table import BY_NAME, SETTINGS, shown_default

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
TRUST_MARK = "†"


def settings_rows(text: str) -> list[list[str]]:
    """The cells of each row of the table under `## Settings`."""
    section = text.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| `")]


def names(cell: str) -> tuple[str, ...]:
    return tuple(re.findall(r"`([^`]+)`", cell))


def table_problems(text: str) -> list[str]:
    """What the doc's table gets wrong about the settings table; [] when it agrees."""
    problems = []
    seen = set()
    for cells in settings_rows(text):
        if len(cells) != 5:
            problems.append(f"a row without 5 cells: {cells}")
            continue
        key, flag, variables, default, _ = cells
        (name,) = names(key) or ("",)
        s = BY_NAME.get(name)
        if s is None:
            problems.append(f"{key}: no such setting")
            continue
        seen.add(name)
        if names(flag) != ((s.flag_name,) if s.flag_name else ()):
            problems.append(f"{name}: flag {flag!r}, the table has {s.flag_name}")
        if names(variables) != s.variables:
            problems.append(f"{name}: variables {variables!r}, the table has {s.variables}")
        if (TRUST_MARK in variables) != (name in SENSITIVE):
            problems.append(f"{name}: the {TRUST_MARK} of a setting a .env sets only when trusted is "
                            f"{'missing' if name in SENSITIVE else 'wrong'}")
        if default != shown_default(s):
            problems.append(f"{name}: default {default!r}, the table has {shown_default(s)!r}")
    problems += [f"{s.name}: no row" for s in SETTINGS if s.name not in seen]
    return problems


def test_the_docs_table_is_the_settings_table():
    assert table_problems(DOC.read_text(encoding="utf-8")) == []


def test_the_docs_table_names_every_setting_once_in_table_order():
    keys = [names(cells[0])[0] for cells in settings_rows(DOC.read_text(encoding="utf-8"))]
    assert keys == [s.name for s in SETTINGS]


# ---------------------------------------------------------------- the checker can fail

def _doc_with(old: str, new: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize(("old", "new", "found"), [
    ("| 32,000 |", "| 16,000 |", "max_output_tokens: default '16,000'"),
    ("`--max-turns`", "`--max-turnz`", "max_turns: flag"),
    ("`CTXTUI_MAX_TURNS`", "`CTXTUI_MAX_TURN`", "max_turns: variables"),
    ("`CTXTUI_HOME` †", "`CTXTUI_HOME`", "home: the †"),
    ("`CTXTUI_THEME` |", "`CTXTUI_THEME` † |", "theme: the †"),
    ("| `theme` |", "| `colour` |", "`colour`: no such setting"),
])
def test_a_wrong_row_is_found(old, new, found):
    problems = table_problems(_doc_with(old, new))
    assert any(p.startswith(found) for p in problems), problems


def test_a_missing_row_is_found():
    text = DOC.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `bash_timeout` |"))
    assert table_problems(text.replace(row + "\n", "")) == ["bash_timeout: no row"]
