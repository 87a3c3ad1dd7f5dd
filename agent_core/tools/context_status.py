"""context_status: the model reads its own context figures, the ones the user sees in the context
pane: tokens against the window and the auto-compact threshold, the state, the session's dollars
and the prompt cache's time left. Read-only and allowed by default; the loop hands the figures in
through `ToolContext.status` (the tool keeps nothing)."""
from __future__ import annotations

from agent_core.tools.base import Tool, ToolContext, ToolOutput


class ContextStatusTool(Tool):
    name = "context_status"
    description = ("Your context use now: tokens, window, auto-compact threshold, state, the session's "
                   "dollars and the prompt cache's time left. Read-only.")
    input_schema = {"type": "object", "properties": {}, "additionalProperties": False}
    read_only = True

    async def run(self, input: dict, ctx: ToolContext) -> ToolOutput:  # noqa: A002
        if ctx.status is None:
            return ToolOutput("Context figures are not available in this session.", is_error=True,
                              meta={"error": "no_status"})
        s = ctx.status()
        return ToolOutput(describe(s), meta={"context_status": s})


def describe(s: dict) -> str:
    """The figures as a few plain lines for the model."""
    tokens, window, threshold = s["tokens"], s["window"], s["threshold"]
    lines = [f"Context: {tokens:,} of {window:,} tokens ({100 * tokens / max(1, window):.0f}% of the window); "
             f"auto-compact at {threshold:,} ({max(0, threshold - tokens):,} tokens left before it); "
             f"state: {s['state']}."]
    usd = s.get("cost_usd")
    lines.append(f"Session cost so far: {'unknown (no price for this model)' if usd is None else f'${usd:,.4f}'}.")
    left, cached = s.get("cache_expires_in_s"), s.get("cached_tokens") or 0
    if left is None or not cached:
        lines.append("Prompt cache: nothing cached yet.")
    elif left <= 0:
        lines.append(f"Prompt cache: cold (its {s.get('cache_ttl')} TTL has passed); the next request writes "
                     f"every token again.")
    else:
        lines.append(f"Prompt cache: warm, {int(left // 60)}:{int(left % 60):02d} left ({s.get('cache_ttl')} TTL); "
                     f"the next request reads {cached:,} cached tokens and writes "
                     f"{s.get('uncached_tokens') or 0:,}.")
    return "\n".join(lines)
