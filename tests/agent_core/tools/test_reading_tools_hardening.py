"""Issue 21, the reading tools' part: a hard link to a file outside the workspace is never read
(read_file, grep, the re-injection after a compaction), and grep holds a bounded part of a line
however long the line is (a 1 GiB single-line file took 2.2 GB)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_core.tools import ToolContext, ToolRegistry
from agent_core.tools import grep as grep_mod
from agent_core.tools.base import ToolError
from agent_core.tools.files import open_regular

ROOT = Path(__file__).resolve().parents[3]
SECRET = "TOP-SECRET-outside-the-workspace"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import os\n\ndef main():\n    return 1\n")
    (tmp_path / "outside.txt").write_text(f"{SECRET}\nline two\n")
    os.link(tmp_path / "outside.txt", root / "notes.txt")          # looks like a workspace file
    return root


@pytest.fixture
def reg() -> ToolRegistry:
    return ToolRegistry()


def _says_why_and_what(content: str) -> None:
    assert "hard link" in content and "outside the workspace" in content
    assert "ask the user" in content and "copy" in content


# --- 1. hard links ---------------------------------------------------------------------------------

async def test_read_file_refuses_a_hard_link_to_an_outside_file(reg, ws):
    out = await reg.execute("read_file", {"path": "notes.txt"}, ToolContext(ws))
    assert out.is_error and SECRET not in out.content
    _says_why_and_what(out.content)
    assert "cp notes.txt notes.txt.copy" in out.content


async def test_read_file_refuses_it_through_a_symlink_inside_the_workspace(reg, ws):
    (ws / "alias.txt").symlink_to(ws / "notes.txt")
    out = await reg.execute("read_file", {"path": "alias.txt"}, ToolContext(ws))
    assert out.is_error and SECRET not in out.content and "hard link" in out.content


async def test_grep_on_the_linked_file_refuses_it(reg, ws):
    out = await reg.execute("grep", {"pattern": "SECRET", "path": "notes.txt"}, ToolContext(ws))
    assert out.is_error and SECRET not in out.content
    _says_why_and_what(out.content)
    assert "'notes.txt'" in out.content           # named as the model wrote it, not by its real path


async def test_grep_over_the_workspace_skips_the_linked_file_and_says_so(reg, ws):
    (ws / "src" / "mention.py").write_text("# TOP-SECRET is a word in this file\n")
    out = await reg.execute("grep", {"pattern": "TOP-SECRET"}, ToolContext(ws))
    assert not out.is_error and SECRET not in out.content
    assert "src/mention.py:1:" in out.content
    assert "1 file(s) not searched" in out.content and "notes.txt" in out.content
    assert out.meta["skipped_hard_links"] == 1
    out = await reg.execute("grep", {"pattern": "line two"}, ToolContext(ws))
    assert out.content.startswith("No matches") and "notes.txt" in out.content and "hard link" in out.content


async def test_glob_lists_the_name_but_shows_no_content(reg, ws):
    out = await reg.execute("glob", {"pattern": "**/*"}, ToolContext(ws))
    assert "notes.txt" in out.content and SECRET not in out.content


def test_the_refusal_is_judged_on_the_open_file(ws, tmp_path):
    """The link count comes from the opened file, so a link made after a path check is caught."""
    plain = ws / "src" / "app.py"
    with open_regular(plain, "src/app.py") as f:          # one name: read as before
        assert f.read().startswith(b"import os")
    os.link(plain, tmp_path / "elsewhere.py")
    with pytest.raises(ToolError, match="2 hard links") as e:
        open_regular(plain, "src/app.py")
    assert e.value.links == 2


def test_reinjection_after_a_compaction_does_not_read_a_hard_link(ws):
    from agent_core.loop.factory import _file_reader

    read = _file_reader(ToolContext(ws))
    assert read("src/app.py").startswith("import os")
    assert read("notes.txt") is None


async def test_write_and_edit_still_refuse_it(reg, ws, tmp_path):
    out = await reg.execute("edit_file", {"path": "notes.txt", "old_string": "line two", "new_string": "x"},
                            ToolContext(ws))
    assert out.is_error and "hard link" in out.content
    assert (tmp_path / "outside.txt").read_text() == f"{SECRET}\nline two\n"


# --- 2. grep on a very long line -------------------------------------------------------------------

@pytest.fixture
def small_windows(monkeypatch):
    """Windows of 64 bytes overlapping by 16, so the long-line path runs on small files."""
    monkeypatch.setattr(grep_mod, "LINE_WINDOW", 64)
    monkeypatch.setattr(grep_mod, "WINDOW_OVERLAP", 16)


@pytest.mark.parametrize("at", [0, 50, 60, 62, 63, 64, 65, 120, 127, 128, 300, 994])
async def test_a_match_anywhere_in_a_long_line_is_found_once(reg, tmp_path, small_windows, at):
    ws = tmp_path / "w"
    ws.mkdir()
    line = bytearray(b"x" * 1000)
    line[at:at + 6] = b"needle"
    (ws / "long.txt").write_bytes(b"short first\n" + bytes(line) + b"\nneedle after\n")
    out = await reg.execute("grep", {"pattern": "needle"}, ToolContext(ws))
    rows = out.content.splitlines()
    assert [r.split(":")[1] for r in rows] == ["2", "3"], out.content
    assert "needle" in rows[0] and "very long line" in rows[0]
    assert rows[1] == "long.txt:3:needle after"


async def test_anchors_keep_their_meaning_in_a_long_line(reg, tmp_path, small_windows):
    ws = tmp_path / "w"
    ws.mkdir()
    (ws / "long.txt").write_bytes(b"start" + b"y" * 500 + b"end\r\n" + b"start short end\n")
    ctx = ToolContext(ws)
    out = await reg.execute("grep", {"pattern": "^start"}, ctx)
    assert [r.split(":")[1] for r in out.content.splitlines()] == ["1", "2"]
    out = await reg.execute("grep", {"pattern": "end$"}, ctx)
    assert [r.split(":")[1] for r in out.content.splitlines()] == ["1", "2"]
    out = await reg.execute("grep", {"pattern": "^y"}, ctx)          # never at a window's start
    assert out.content.startswith("No matches")
    out = await reg.execute("grep", {"pattern": "y$"}, ctx)          # never at a window's end
    assert out.content.startswith("No matches")


_MEMORY_PROBE = r"""
import asyncio, json, resource, sys
from pathlib import Path
from agent_core.tools import ToolContext, ToolRegistry
ws, tool, inp = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
reg, ctx = ToolRegistry(), ToolContext(ws)
warm = {"pattern": "warm", "path": "small.txt"} if tool == "grep" else {"path": "small.txt"}
asyncio.run(reg.execute(tool, warm, ctx))                 # imports, the thread pool: not the tool's own cost
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = asyncio.run(reg.execute(tool, inp, ctx))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
text = out.content if len(out.content) < 4000 else out.content[:2000] + out.content[-2000:]
print(json.dumps({"extra_kib": after - before, "content": text, "error": out.is_error}))
"""


def _peak(ws: Path, tool: str, inp: dict) -> dict:
    """Run `tool` in a fresh process; how much its peak memory grew (KiB) and what it answered."""
    (ws / "small.txt").write_text("warm\n")
    proc = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(ws), tool, json.dumps(inp)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _one_line_file(path: Path, mib: int, byte: bytes, tail: bytes) -> None:
    block = byte * (1 << 20)
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(block)
        f.write(tail)


def test_grep_on_a_huge_single_line_file_keeps_memory_bounded(tmp_path):
    """A 200 MiB file that is one line (the issue's 1 GiB file took 2.2 GB): the peak memory of a
    process running the grep tool grows by far less than the line, and the needle at its end is found."""
    ws = tmp_path / "w"
    ws.mkdir()
    _one_line_file(ws / "big.txt", 200, b"a", b"needle\nsecond line needle\n")
    result = _peak(ws, "grep", {"pattern": "needle$"})
    assert not result["error"], result
    assert result["extra_kib"] < 100 * 1024, f"grep's peak memory grew by {result['extra_kib'] / 1024:.0f} MiB"
    rows = result["content"].splitlines()
    assert rows[0].startswith("big.txt:1:") and "needle" in rows[0] and len(rows[0]) < 500
    assert rows[1] == "big.txt:2:second line needle"


def test_read_file_on_a_huge_single_line_file_stays_bounded_too(tmp_path):
    """read_file already cut long lines as it read them; checked so that neither tool regresses."""
    ws = tmp_path / "w"
    ws.mkdir()
    _one_line_file(ws / "big.txt", 64, b"b", b"\nend\n")
    result = _peak(ws, "read_file", {"path": "big.txt"})
    assert "line cut" in result["content"] and "\n2\tend" in result["content"]
    assert result["extra_kib"] < 50 * 1024
