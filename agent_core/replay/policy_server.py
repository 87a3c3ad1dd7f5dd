"""`ctxtui replay --policy server`: an estimate of the server engine (CTXTUI_ENGINE=server) on a
recorded session. The API's own decisions cannot be replayed — only its documented rules can:

- context editing (`clear_tool_uses_20250919`, as the server engine sends it): once the request is
  over half the window, the results of all but the newest five tool uses are replaced by a short
  placeholder in what the model is shown, if that frees at least 5% of the window. The server
  decides on the whole history every request, so each new tool use past the trigger clears one
  more result and the cached prefix is written again from there;
- server compaction (`compact_20260112`): at the auto-compact threshold the conversation is
  summarized in a step that reads it all (priced like a summary call sharing the prefix) and the
  context becomes the compaction block, sized like the log's own summaries.

What the server really clears, what its summary holds and what its compaction step costs are not
known: the figures are an estimate, and the report says so.
"""
from __future__ import annotations

from compaction.accounting.budget import ContextBudget

from agent_core.context_budget import limits_for
from agent_core.logs.trajectory import Message, Request, Trajectory
from agent_core.replay.policies import new_messages
from agent_core.replay.simulate import Step, SummaryCall
from agent_core.replay.summary_size import SummarySize, summary_prompt_tokens

SERVER = "server"
CLEAR_TRIGGER_SHARE = 0.5        # microcompact's trigger, which the server engine hands the API
CLEAR_AT_LEAST_SHARE = 0.05
KEEP_TOOL_USES = 5
CLEARED_TOKENS = 10              # the placeholder left where a result was
NOTE = ("server: an estimate of CTXTUI_ENGINE=server from the API's documented rules (tool results cleared past "
        "half the window but the newest 5, compaction at the auto-compact threshold); what the server really "
        "clears, summarizes and charges for its compaction step is not in the log.")


class ServerLike:
    """The server engine's policy, from the documented triggers (see the module docstring)."""

    def __init__(self, *, overhead: int, window: int, max_output: int, ttl: str, summary_tokens: int,
                 prompt_tokens: int, name: str = SERVER) -> None:
        self.name, self.ttl = name, ttl
        self.overhead = overhead
        budget = ContextBudget(context_window=window, max_output_tokens=max_output)
        self.compact_trigger = budget.autocompact_threshold
        self.clear_trigger = min(int(window * CLEAR_TRIGGER_SHARE), self.compact_trigger)
        self.clear_at_least = int(window * CLEAR_AT_LEAST_SHARE)
        self.summary_tokens = summary_tokens
        self.prompt_tokens = prompt_tokens
        self.history: list[Message] = []     # what the client sends (the server edits only what the model sees)

    def _tokens(self, messages: list[Message]) -> int:
        return self.overhead + sum(m.tokens for m in messages)

    def _shown(self) -> tuple[list[Message], bool]:
        """What the model is shown: old results cleared when the rule fires; True when it did."""
        if self._tokens(self.history) <= self.clear_trigger:
            return list(self.history), False
        results = [i for i, m in enumerate(self.history) if m.kind == "tool_result"]
        old = results[:-KEEP_TOOL_USES] if len(results) > KEEP_TOOL_USES else []
        freed = sum(max(0, self.history[i].tokens - CLEARED_TOKENS) for i in old)
        if not old or freed < self.clear_at_least:
            return list(self.history), False
        shown = list(self.history)
        for i in old:
            m = shown[i]
            shown[i] = Message(m.role, m.kind, min(m.tokens, CLEARED_TOKENS), m.key + ":server-cleared",
                               tools=m.tools, timestamp=m.timestamp)
        return shown, True

    def reread(self, messages: list[Message]) -> None:
        """A re-read's call and result, in the conversation from the next request on (simulate.py)."""
        self.history.extend(messages)

    def step(self, request: Request) -> Step:
        self.history.extend(new_messages(request))
        shown, cleared = self._shown()
        step = Step(shown)
        if cleared:
            step.compactions.append("server_clear_tool_uses")
        if self._tokens(shown) > self.compact_trigger:
            step.calls.append(SummaryCall(list(shown), self.prompt_tokens, self.summary_tokens, "server_compact"))
            block = Message("assistant", "summary", self.summary_tokens, f"server-compaction\x00{request.index}")
            self.history = [block]
            step.context = [block]
            step.compactions.append("server_compact")
        return step


def server_policy(name: str, traj: Trajectory, *, window: int, ttl: str, size: SummarySize) -> tuple[ServerLike, int]:
    """The policy for one trajectory and the window its overflows are counted against."""
    max_out = limits_for(traj.model).max_output_tokens
    return ServerLike(overhead=traj.overhead_tokens, window=window, max_output=max_out, ttl=ttl,
                      summary_tokens=size.tokens, prompt_tokens=summary_prompt_tokens(), name=name), window
