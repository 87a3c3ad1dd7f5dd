"""Project memory (issue 28): CLAUDE.md and AGENTS.md from ~/.claude, the folders from home down to
the workspace, nearest last, in the system prompt and counted as their own category; a planted
link or a shared folder above an outside workspace is never read; a large file is cut, said."""
from __future__ import annotations

import os
from pathlib import Path

from agent_core import events as ev
from agent_core.loop.memory_files import MAX_FILE_CHARS, candidates, load_memory
from tests.agent_helpers import collect, fake_agent, make_workspace, of
from tests.fake_anthropic import FakeAnthropic, reply


def _home() -> Path:
    return Path(os.environ["HOME"])          # conftest points HOME at a folder of the test's own


def test_the_order_user_file_then_outermost_folder_to_the_workspace():
    home = _home()
    ws = home / "src" / "proj"
    ws.mkdir(parents=True)
    (home / ".claude").mkdir()
    for path, text in [(home / ".claude" / "CLAUDE.md", "N1"), (home / "src" / "CLAUDE.md", "N2"),
                       (ws / "AGENTS.md", "N4"), (ws / "CLAUDE.md", "N3")]:
        path.write_text(text)
    mem = load_memory(ws, home)
    assert [f.text for f in mem.files] == ["N1", "N2", "N3", "N4"]
    part = mem.prompt_part()
    assert part.index("N1") < part.index("N2") < part.index("N3") < part.index("N4")
    assert mem.tokens == sum(f.tokens for f in mem.files) > 0 and not mem.notices


def test_a_workspace_outside_home_reads_no_folder_above_it(tmp_path):
    ws = tmp_path / "shared" / "ws"
    ws.mkdir(parents=True)
    (tmp_path / "shared" / "CLAUDE.md").write_text("planted by another user")
    assert all(p.parent in (ws, _home() / ".claude") for p in candidates(ws, _home()))
    assert load_memory(ws, _home()).files == []


def test_a_symlink_in_the_workspace_is_refused_the_user_s_own_link_is_followed(tmp_path):
    home = _home()
    ws = home / "proj"
    ws.mkdir(parents=True)
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY")
    (ws / "CLAUDE.md").symlink_to(secret)
    dotfiles = tmp_path / "dotfiles-claude.md"
    dotfiles.write_text("from my dotfiles")
    (home / ".claude").mkdir()
    (home / ".claude" / "CLAUDE.md").symlink_to(dotfiles)
    mem = load_memory(ws, home)
    assert [f.text for f in mem.files] == ["from my dotfiles"]
    assert "PRIVATE KEY" not in mem.prompt_part()
    assert any("CLAUDE.md was not read: it is a symlink" in n for n in mem.notices)


def test_a_large_file_is_cut_with_a_notice_and_a_fifo_is_not_opened(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "CLAUDE.md").write_text("x" * (MAX_FILE_CHARS + 500))
    os.mkfifo(ws / "AGENTS.md")
    mem = load_memory(ws, _home())
    (f,) = mem.files
    assert f.cut and len(f.text) == MAX_FILE_CHARS
    assert any("larger than" in n for n in mem.notices) and any("FIFO" in n for n in mem.notices)


async def test_memory_reaches_the_model_and_is_its_own_category(tmp_path):
    ws = make_workspace(tmp_path)
    (ws / "CLAUDE.md").write_text("Always run `make check` before you say you are done.\n" * 20)
    with FakeAnthropic([reply("noted")]) as fake:
        agent = fake_agent(ws, fake.base_url)
        events = await collect(agent.run("hi"))
        await agent.aclose()
    system = fake.message_requests[0]["system"]
    text = system if isinstance(system, str) else "".join(b["text"] for b in system)
    assert "Always run `make check`" in text and str(ws / "CLAUDE.md") in text
    cats = of(events, ev.ContextUpdate)[-1].categories
    assert abs(cats["memory"] - agent.memory_tokens) <= agent.memory_tokens * 0.1 and cats["memory"] > 100
    assert [f.path.name for f in agent.memory.files] == ["CLAUDE.md"]


async def test_without_memory_files_there_is_no_memory_category(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic([reply("hi")]) as fake:
        agent = fake_agent(ws, fake.base_url)
        events = await collect(agent.run("hi"))
        await agent.aclose()
    assert "memory" not in of(events, ev.ContextUpdate)[-1].categories
    assert "Memory files" not in str(fake.message_requests[0]["system"])
