"""A turn's bookkeeping and limits: what a cancel needs to repair the history, the user's caps on
calls and dollars, and the answer's room in the window (max_tokens)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from compaction.accounting.budget import ContextBudget

from agent_core.context_budget import ESTIMATE_MARGIN, OUTPUT_FLOOR, output_room
from agent_core.providers.model import ModelError

# The SDK retries failed requests itself, but never a stream that broke after it started.
MID_STREAM_RETRIES = 2


@dataclass
class TurnLimits:
    max_turns: int | None = None          # model calls per run()
    max_budget_usd: float | None = None   # session cost at which runs stop


@dataclass
class TurnState:
    """Mutable bookkeeping of the running turn, so a cancel can repair history."""
    calls: int = 0
    partial_text: list[str] = field(default_factory=list)
    pending_tool_uses: list[dict] = field(default_factory=list)
    done_results: dict[str, dict] = field(default_factory=dict)
    reactive_used: bool = False        # the one compaction after "prompt too long" was spent
    stream_retries: int = 0            # answers that broke off mid-stream and were sent again
    refit_used: bool = False           # the one resend after "input length and max_tokens exceed ..."
    undercount: int = 0                # tokens the API counted above the estimate (learnt from that error)
    call_s: float = 0.0                # how long the latest main call took, request to last byte


def over_limit(limits: TurnLimits, calls: int, total_usd: float | None) -> tuple[str, str] | None:
    """(stop reason, what to say) when --max-turns or --max-budget-usd is reached."""
    if limits.max_turns is not None and calls >= limits.max_turns:
        return "max_turns", f"Stopped after {calls} model calls (--max-turns)."
    if limits.max_budget_usd is not None and total_usd is not None and total_usd >= limits.max_budget_usd:
        return "budget", (f"Stopped: the session cost ${total_usd:.4f} reached the budget of "
                          f"${limits.max_budget_usd:.4f} (--max-budget-usd).")
    return None


def max_tokens(b: ContextBudget, max_output: int, request_tokens: int, undercount: int, api_judges: bool) -> int:
    """The model's max output, lowered so the request's count + max_tokens fits the window; when
    not even a small floor fits, or the count (with what the API said it counts above it) is at
    the blocking limit, the request is too long (raised as the API would say it: nothing sent).
    `api_judges`: the server shrinks the request first, or the policy is reactive."""
    n = request_tokens + undercount
    floor = min(OUTPUT_FLOOR, b.reserve)
    room = output_room(b.context_window, max_output, n, floor)
    if room is None and api_judges:
        return floor
    if room is None:
        raise ModelError("prompt_too_long", f"The request (about {n:,} tokens) leaves no room for an answer "
                                            f"in the {b.context_window:,}-token window; nothing was sent. "
                                            "Run /compact.")
    if n >= b.blocking_limit and not api_judges:
        raise ModelError("prompt_too_long", f"The request, counted at about {n:,} tokens with what the API "
                                            f"counted above the estimate, is at or above the blocking limit of "
                                            f"{b.blocking_limit:,} (window {b.context_window:,}); nothing was "
                                            "sent. Run /compact.")
    # The count is an estimate: keep a margin of its usual error, so the API rarely has to say so.
    margin = math.ceil(ESTIMATE_MARGIN * request_tokens)
    return min(room, max(floor, b.context_window - n - margin))


def refit_room(b: ContextBudget, max_output: int, request_tokens: int, counted: int, window: int) -> tuple[int, bool]:
    """After "input length and max_tokens exceed the context limit": the undercount of the resend
    (what the API counted above the estimate, plus any window it has that is smaller than ours) and
    whether the output floor still fits with it."""
    undercount = max(0, counted - request_tokens) + max(0, b.context_window - window)
    fits = output_room(b.context_window, max_output, request_tokens + undercount, min(OUTPUT_FLOOR, b.reserve))
    return undercount, fits is not None
