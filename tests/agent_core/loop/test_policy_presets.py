"""`--policy NAME` (CTXTUI_POLICY): the engine presets of compaction/presets.py run live, the same
definitions `ctxtui replay` replays (issue 25)."""
from __future__ import annotations

import pytest

from agent_core import events as ev
from agent_core.config import ConfigError, load_config
from compaction import project, validate_history
from compaction.presets import PRESETS, apply_preset
from compaction.layer_context import PipelineConfig

from tests.agent_helpers import collect, demo_agent, of
from tests.demo_project import fixed_place

PROMPTS = ["explore this repository", "how does compaction work?", "what does the agent loop do?",
           "explain the tools and the sandbox", "how are costs computed?", "describe the TUI widgets",
           "how are sessions saved and resumed?", "what do the tests cover?"]


def stage_names(agent) -> list[str]:
    return [s.name for s in agent.pipeline.stages]


def test_the_presets_are_the_five_the_docs_name():
    assert list(PRESETS) == ["ctxtui", "cc", "cc-reactive", "summary", "none"]


def test_a_preset_never_turns_on_what_the_user_turned_off():
    off = PipelineConfig(collapse_enabled=False, time_based_enabled=False)
    cc = apply_preset(off, "cc")
    assert not cc.collapse_enabled and not cc.time_based_enabled and not cc.snip_enabled
    assert apply_preset(PipelineConfig(), "cc").time_based_enabled


def test_policy_from_flag_and_environment(tmp_path):
    assert load_config({"model": "demo", "policy": "cc"}, environ={}, workspace=tmp_path).policy == "cc"
    assert load_config({"model": "demo"}, environ={"CTXTUI_POLICY": "Summary"}, workspace=tmp_path).policy == "summary"
    assert load_config({"model": "demo"}, environ={}, workspace=tmp_path).policy == "ctxtui"
    with pytest.raises(ConfigError) as e:
        load_config({"model": "demo", "policy": "claude"}, environ={}, workspace=tmp_path)
    assert "--policy" in str(e.value) and "ctxtui, cc, cc-reactive, summary, none" in str(e.value)


def test_each_preset_builds_its_pipeline(tmp_path):
    default = demo_agent(tmp_path, home=str(tmp_path / "a"))
    assert stage_names(default) == ["session_memory", "autocompact"]
    assert default.pipeline.config.collapse_enabled and default.pipeline.config.cache_aware
    cc = demo_agent(tmp_path, home=str(tmp_path / "b"), policy="cc")
    c = cc.pipeline.config
    assert stage_names(cc) == ["autocompact"]
    assert (c.snip_enabled, c.collapse_enabled, c.micro_count_enabled, c.cache_aware) == (False,) * 4
    assert c.time_based_enabled and c.time_gap_minutes == 60 and c.time_keep_recent == 5
    # Claude Code's buffers do not fit the demo's 30,000 window: the default, scaled ones apply
    assert cc.pipeline.budget.autocompact_threshold == default.pipeline.budget.autocompact_threshold
    reactive = demo_agent(tmp_path, home=str(tmp_path / "d"), policy="cc-reactive")
    assert c.proactive and not reactive.pipeline.config.proactive
    none = demo_agent(tmp_path, home=str(tmp_path / "c"), policy="none")
    assert not none.pipeline.budget.autocompact_enabled and not none.pipeline.config.tool_result_budget_enabled


async def run_all(agent) -> set[str]:
    layers: set[str] = set()
    for p in PROMPTS:
        events = await collect(agent.run(p))
        assert validate_history(project(agent.entries)) == []
        layers |= {c.layer for c in of(events, ev.Compaction)}
    await agent.aclose()
    return layers


@pytest.mark.parametrize("policy, allowed", [("summary", {"autocompact", "tool_result_budget"}),
                                             ("cc", {"autocompact", "microcompact", "tool_result_budget"}),
                                             ("cc-reactive", {"autocompact", "microcompact", "tool_result_budget"}),
                                             ("none", set())])
async def test_a_demo_session_under_each_preset_uses_only_its_layers(tmp_path, policy, allowed):
    with fixed_place() as (ws, env):
        agent = demo_agent(ws, home=str(tmp_path), policy=policy)
        layers = await run_all(agent)
    assert layers <= allowed, layers
    if policy != "none":
        assert "autocompact" in layers          # the demo's 30,000 window fills within 8 prompts


def test_the_cli_help_names_every_preset_in_order():
    """app/cli/main.py spells the presets out (importing compaction would slow every command)."""
    import re
    from app.cli.main import build_parser
    text = " ".join(build_parser().format_help().split())
    at = text.index("--policy NAME the compaction policy")
    named = re.findall(r"(?<![\w-])(ctxtui|cc|cc-reactive|summary|none) \(", text[at:at + 800])
    assert named == list(PRESETS)


def test_a_policy_other_than_the_default_is_said_at_start(tmp_path):
    """Headless stream-json: a notice names the policy before the run; the default says nothing."""
    import json
    from tests.agent_helpers import user_dirs
    from tests.headless_helpers import run_headless
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    said = {}
    for policy in ("cc", "ctxtui"):
        env = {**user_dirs(), "CTXTUI_HOME": str(tmp_path / policy)}
        code, out, err = run_headless(["-p", "hi", "--workspace", str(ws), "--output-format", "stream-json",
                                       "--policy", policy], env)
        assert code == 0, err
        said[policy] = [e["message"] for e in map(json.loads, out.splitlines()) if e["type"] == "notice"]
    assert any(m.startswith("compaction policy cc: Claude Code's pipeline") for m in said["cc"])
    assert not any("compaction policy" in m for m in said["ctxtui"])
