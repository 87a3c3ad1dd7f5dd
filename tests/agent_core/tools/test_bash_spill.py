"""A capped bash result loses nothing: the whole output is kept on disk, 0600."""
from __future__ import annotations

import os
import stat

from agent_core.tools import ToolContext, ToolRegistry


async def test_ten_megabytes_are_capped_in_the_result_and_saved_whole(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = ToolContext(ws, spill_dir=ws / ".ctxtui" / "tool-results")
    out = await ToolRegistry().execute("bash", {"command": "head -c 10000000 /dev/zero | tr '\\0' a"}, ctx)
    assert not out.is_error
    assert len(out.content) < 40_000
    saved = out.meta["full_output"]
    assert saved and os.path.getsize(saved) == 10_000_000
    assert stat.S_IMODE(os.stat(saved).st_mode) == 0o600
    assert os.path.relpath(saved, ws) in out.content


async def test_small_output_leaves_no_spill_file(tmp_path):
    spill = tmp_path / "spill"
    ctx = ToolContext(tmp_path, spill_dir=spill)
    out = await ToolRegistry().execute("bash", {"command": "echo hello"}, ctx)
    assert "hello" in out.content and out.meta["full_output"] is None
    assert not spill.exists() or not list(spill.iterdir())
