"""`ctxtui watch`'s activity pane: the last prompt and the tool calls since, each field shown through
`agent_core.security.visible_text`, as `Content` (never markup)."""
from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from agent_core.security.visible_text import one_line
from agent_core.watch.state import WatchState


class ActivityFeed(Static):
    """The last prompt, then the latest tool calls since it (newest last), one line each; then the
    latest request that read short of the prompt cache, with where and why (the cache doctor)."""

    TOOL_LINES = 3

    def show(self, state: WatchState | None) -> None:
        prompt = state.last_prompt if state is not None else None
        calls = list(state.tool_calls)[-self.TOOL_LINES:] if state is not None else []
        lines: list = [Content.assemble(("› ", "bold $accent"), (one_line(prompt.text), "bold")) if prompt is not None
                       else Content.styled("no prompt yet", "$foreground-muted")]
        earlier = (state.tool_count - len(calls)) if state is not None else 0
        if earlier > 0:
            lines.append(Content.styled(f"  … {earlier:,} earlier tool call{'' if earlier == 1 else 's'}",
                                        "$foreground-muted"))
        for item in calls:
            lines.append(Content.assemble(("  ⚙ ", "$warning"), (one_line(item.tool or "?"), "bold"), " ",
                                          one_line(item.text)))
        if state is not None and state.cache_misses:     # the latest request that read short of the cache
            n, m = state.cache_miss_count, state.cache_misses[-1]
            lines.append(Content.assemble(("  ⚠ cache: ", "$warning"), f"request {m.request}: ", one_line(m.reason()),
                                          (f" · read {m.read:,} of {m.expected:,} · {n:,} miss{'' if n == 1 else 'es'}"
                                           " so far", "$foreground-muted")))
        self.update(Content("\n").join(lines))
