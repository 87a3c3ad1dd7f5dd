"""The pieces of `ctxtui acp` that need no process: its help, what it imports, the usage update's
figures and _meta, the permission answers, tool titles and prompt blocks, the input's lines."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from acp import RequestError
from acp._transport import NdjsonTransport     # the SDK's own reading of stdio lines, that Requests serves
from acp.schema import (AllowedOutcome, DeniedOutcome, RequestPermissionResponse, ResourceContentBlock,
                        TextContentBlock)

from agent_core import events as ev
from app.acp.permissions import ask, decision_of
from app.acp.prompt_input import prompt_text
from app.acp.stdio import Requests
from app.acp.tool_calls import title_of
from app.acp.usage import UsageReporter
from app.cli.main import build_parser, main as cli_main
from tests.app.acp.acp_helpers import ROOT, spawn_env


def test_help_names_every_flag_and_ctxtui_help_names_the_command(capsys):
    with pytest.raises(SystemExit) as stop:
        cli_main(["acp", "--help"])
    out = capsys.readouterr().out
    assert stop.value.code == 0
    for flag in ("--model", "--allow", "--home", "--mcp-config", "--context-window", "--policy", "--max-budget-usd",
                 "agent_servers", "usage_update", "exit codes"):
        assert flag in out, flag
    assert "ctxtui acp [options]" in build_parser().format_help()


def test_only_ctxtui_acp_loads_the_sdk_and_it_never_loads_textual():
    code = ("import sys\n"
            "from app.cli.main import build_parser\n"
            "build_parser().format_help()\n"
            "assert 'acp' not in sys.modules, 'the ACP SDK loaded for another command'\n"
            "import app.acp.main\n"
            "assert 'acp' not in sys.modules, 'ctxtui acp --help loads the SDK'\n"
            "import app.acp.server\n"
            "assert 'acp' in sys.modules\n"
            "assert 'textual' not in sys.modules and 'rich' not in sys.modules\n"
            "assert 'anthropic' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), env=spawn_env(), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def _context(tokens: int, window: int = 10_000) -> ev.ContextUpdate:
    return ev.ContextUpdate(tokens=tokens, window=window, threshold=8_000, state="ok", percent_left=20.0)


def test_usage_updates_carry_the_figures_and_each_compaction_once():
    total = {"usd": 0.5}
    usage = UsageReporter(lambda: total["usd"], lambda u: 0.02)
    first = usage.update(_context(1_234))
    assert (first.used, first.size, first.cost.amount, first.cost.currency) == (1_234, 10_000, 0.5, "USD")
    assert usage.update(_context(1_234)) is None                  # nothing changed: not sent again
    usage.compaction(ev.Compaction(layer="autocompact", trigger="manual", tokens_before=9_000, tokens_after=2_000,
                                   usage={"input_tokens": 9_000, "output_tokens": 500},
                                   cache={"cost_usd": 0.01, "saves_per_call_usd": 0.002}))
    total["usd"] = None                                            # a price became unknown: no cost
    after = usage.update(_context(2_000))
    (c,) = after.field_meta["ctxtui"]["compactions"]
    assert c == {**c, "layer": "autocompact", "trigger": "manual", "tokensBefore": 9_000, "tokensAfter": 2_000,
                 "costUsd": 0.02, "cacheRewriteUsd": 0.01, "savesPerCallUsd": 0.002}
    assert after.cost is None and after.field_meta["ctxtui"]["threshold"] == 8_000
    dumped = after.model_dump(by_alias=True, exclude_none=True)
    assert dumped["sessionUpdate"] == "usage_update" and "compactions" in dumped["_meta"]["ctxtui"]
    assert "compactions" not in usage.update(_context(2_500)).field_meta["ctxtui"]


def test_permission_answers_map_onto_ctxtuis_own():
    def selected(option: str) -> RequestPermissionResponse:
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option))
    assert [decision_of(selected(o)) for o in ("allow", "always", "deny", "something-else")] == \
        ["allow", "always", "deny", "deny"]
    assert decision_of(RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))) == "deny"
    assert decision_of(None) == "deny"


async def test_the_editor_is_told_where_bash_will_run():
    """The permission request's title carries the loop's note (in the OS sandbox, or unconfined)."""
    asked = []

    class Conn:
        async def request_permission(self, session_id, tool_call, options):
            asked.append(tool_call)
            return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="allow"))
    req = ev.PermissionRequest(id="t1", name="bash", input={"command": "ls"},
                               note="It will run in the OS sandbox (network: none).")
    await ask(Conn(), "s1", req, "/w")
    assert asked[0].title == "bash: ls — It will run in the OS sandbox (network: none)."
    assert await req.reply == "allow"


def test_tool_titles_are_one_short_line():
    assert title_of("bash", {"command": "ls\n  -la"}) == "bash: ls -la"
    assert title_of("read_file", {"path": "src/app.py"}) == "read_file: src/app.py"
    assert len(title_of("bash", {"command": "x" * 500})) < 140
    assert title_of("context_status", {}) == "context_status"


def test_prompt_blocks_become_one_text_and_images_are_refused():
    blocks = [TextContentBlock(type="text", text="fix it"),
              ResourceContentBlock(type="resource_link", uri="file:///w/a.py", name="a.py")]
    assert prompt_text(blocks) == "fix it\n\n[resource: file:///w/a.py]"
    with pytest.raises(RequestError):
        prompt_text([type("Image", (), {"type": "image"})()])


class _Answers:
    """What Requests writes its answers to (a StreamWriter's write and drain)."""

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data))

    async def drain(self) -> None:
        pass


async def test_lines_over_the_limit_pass_whole_when_they_start_an_object_and_are_refused_when_not():
    """The SDK reads a line over the limit in parts: an object's parts reach it whole; an array's
    are dropped (a 50 MB `[...]` would have killed the agent as a short one did) and answered."""
    reader = Requests(limit=16)
    reader.answers = answers = _Answers()  # type: ignore[assignment]
    message = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s" * 100}}
    reader.feed_data(json.dumps(message).encode() + b"\n[" + b"1," * 100 + b'1]\n{"id": 1}\n[2]')
    reader.feed_eof()
    received = NdjsonTransport(reader, sender=None)  # type: ignore[arg-type]
    assert [await received.receive() for _ in range(3)] == [message, {"id": 1}, None]
    assert [(a["id"], a["error"]["code"]) for a in answers.sent] == [(None, -32600)] * 2
    assert "size limit" in answers.sent[0]["error"]["data"]["details"]
