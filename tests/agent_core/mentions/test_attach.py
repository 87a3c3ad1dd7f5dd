"""Attaching @-mentioned files to the user message: confined as the tools are, once per file,
text files only, each refusal said; the engine then counts the file as read."""
from __future__ import annotations

import os

from agent_core import events as ev
from agent_core.context_items import context_items
from agent_core.mentions.attach import MAX_FILES, mention_entry
from agent_core.tools.base import ToolContext
from compaction.layers.session_memory import SessionNotes
from compaction.mentioned_files import mentioned
from compaction.reinject import recent_reads, reinject


def _ws(tmp_path):
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("def main():\n    return 42\n")
    (ws / "notes.md").write_text("# Notes\n")
    return ws


def _notices(got) -> list[str]:
    return [e.message for e in got.events if type(e) is ev.Notice]


async def test_a_mentioned_file_is_its_own_block_after_the_prompt(tmp_path):
    ws = _ws(tmp_path)
    got = await mention_entry("explain @src/app.py please", ToolContext(ws))
    blocks = got.entry.content
    assert blocks[0] == {"type": "text", "text": "explain @src/app.py please"}
    assert len(blocks) == 2
    assert blocks[1]["text"].startswith("[Contents of src/app.py, attached because the user mentioned it")
    assert "\n2\t    return 42" in blocks[1]["text"]            # read_file's numbered lines
    [chip] = [e for e in got.events if isinstance(e, ev.FileMentioned)]
    assert (chip.path, chip.lines, chip.total_lines) == ("src/app.py", 2, 2)
    assert chip.message == "Attached @src/app.py (2 lines)."
    assert got.entry.meta["mentions"] == [{"path": "src/app.py", "block": 1, "partial": False, "lines": 2,
                                           "total_lines": 2}]


async def test_no_mention_no_change(tmp_path):
    got = await mention_entry("hello there, me@example.com", ToolContext(_ws(tmp_path)))
    assert got.entry.content == [{"type": "text", "text": "hello there, me@example.com"}]
    assert got.entry.meta == {} and got.events == ()


async def test_the_same_file_mentioned_twice_is_attached_once(tmp_path):
    got = await mention_entry("@notes.md and @./notes.md and @src/../notes.md", ToolContext(_ws(tmp_path)))
    assert len(got.entry.content) == 2
    assert len(mentioned(got.entry)) == 1


async def test_escapes_symlinks_out_missing_binary_and_folders_are_said_and_not_attached(tmp_path):
    ws = _ws(tmp_path)
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    os.symlink(tmp_path / "secret.txt", ws / "link.txt")
    (ws / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    got = await mention_entry(f"@../secret.txt @{tmp_path}/secret.txt @link.txt @gone.py @blob.bin @src",
                              ToolContext(ws))
    assert len(got.entry.content) == 1 and "mentions" not in got.entry.meta
    assert "TOP SECRET" not in str(got.entry.content)
    assert _notices(got) == [
        "@../secret.txt was not attached: it is outside the workspace.",
        f"@{tmp_path}/secret.txt was not attached: it is outside the workspace.",
        "@link.txt was not attached: it leads through a symlink out of the workspace.",
        "@gone.py was not attached: there is no such file in the workspace.",
        "@blob.bin was not attached: it is a binary file.",
        "@src was not attached: it is a folder (mention a file in it).",
    ]


async def test_ctxtuis_state_is_never_attached(tmp_path):
    ws = _ws(tmp_path)
    (ws / ".ctxtui").mkdir()
    (ws / ".ctxtui" / "log.jsonl").write_text("{}\n")
    got = await mention_entry("@.ctxtui/log.jsonl", ToolContext(ws, protected=(ws / ".ctxtui",)))
    assert _notices(got) == ["@.ctxtui/log.jsonl was not attached: it is ctxtui's own state."]


async def test_a_hostile_name_is_escaped_in_what_is_said(tmp_path):
    ws = _ws(tmp_path)
    name = "x\x1b]0;pwned\x07.txt"
    (ws / name).write_text("hello\n")
    got = await mention_entry('@"x\\x1b]0;pwned\\x07.txt" @"gone\\x1b[2K"', ToolContext(ws))
    said = [e.message for e in got.events]
    assert said == ["Attached @x␛]0;pwned␇.txt (1 line).", "@gone␛[2K was not attached: there is no such file "
                                                             "in the workspace."]
    assert all("\x1b" not in s for s in said)


async def test_a_big_file_is_cut_as_read_file_cuts_it(tmp_path):
    ws = _ws(tmp_path)
    (ws / "big.txt").write_text("".join(f"line {i}\n" for i in range(5000)))
    got = await mention_entry("@big.txt", ToolContext(ws, read_max_lines=100))
    [m] = mentioned(got.entry)
    assert m.partial and m.content.count("\n") < 110
    assert "(lines 1-100 of 5000: read_file the rest)" in got.entry.content[1]["text"]
    assert "lines 1-100 of 5,000" in got.events[0].message


async def test_at_most_max_files_are_attached(tmp_path):
    ws = _ws(tmp_path)
    for i in range(MAX_FILES + 2):
        (ws / f"f{i}.txt").write_text("x\n")
    got = await mention_entry(" ".join(f"@f{i}.txt" for i in range(MAX_FILES + 2)), ToolContext(ws))
    assert len(mentioned(got.entry)) == MAX_FILES
    assert len(_notices(got)) == 2


async def test_a_mentioned_file_counts_as_read_for_reinjection_context_and_memory(tmp_path):
    ws = _ws(tmp_path)
    entry = (await mention_entry("fix @src/app.py", ToolContext(ws))).entry
    [rec] = recent_reads([entry])
    assert rec.path == "src/app.py" and "return 42" in (rec.content or "")
    # re-injected after a compaction that dropped it, with the model told it is attached again
    [again] = await reinject([entry], [])
    assert again.meta["path"] == "src/app.py" and "Re-attached after compaction: src/app.py" in again.text()
    # kept: not re-injected a second time
    assert await reinject([entry], [entry]) == []
    kinds = [(i.kind, i.label) for i in context_items([entry])]
    assert kinds == [("user", "fix @src/app.py"), ("mentioned file", "src/app.py")]
    notes = SessionNotes({})
    notes.update([entry])
    assert "src/app.py" in notes.s["files_read"]
    assert notes.s["requests"] == ["fix @src/app.py"]       # the file's text is not the user's words
