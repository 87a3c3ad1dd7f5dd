"""Tool calls and results for the tool-result budget (layer 1), and the context its layer runs in."""
from __future__ import annotations

from compaction import Entry, PipelineConfig, PipelineState, count_tokens, tool_result_block
from compaction.layer_context import LayerContext

T0 = 1_700_000_000.0


def call(tid: str, name: str = "bash") -> dict:
    return {"type": "tool_use", "id": tid, "name": name, "input": {"command": "cat big.log"}}


def history(*results: tuple[str, str, str], usage: bool = False) -> list[Entry]:
    """user, assistant(calls), user(results) for (tool_use_id, tool name, content) triples."""
    calls = [call(tid, name) for tid, name, _ in results]
    return [Entry({"role": "user", "content": [{"type": "text", "text": "go"}]}, timestamp=T0),
            Entry({"role": "assistant", "content": calls}, response_id="r1", timestamp=T0 + 1,
                  usage={"input_tokens": 100, "output_tokens": 10} if usage else None),
            Entry({"role": "user", "content": [tool_result_block(tid, c) for tid, _, c in results]}, timestamp=T0 + 2)]


def ctx(es, state=None, session_dir=None, **cfg) -> LayerContext:
    config = PipelineConfig(**cfg)
    return LayerContext(config, state or PipelineState(), session_dir, T0 + 10, count_tokens(es))
