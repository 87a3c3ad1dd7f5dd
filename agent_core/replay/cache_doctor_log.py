"""The cache doctor on a recorded session (a Claude Code log or ctxtui's): each main request that
read less from the cache than the request before it left there, with where its prefix changed and
why (compaction.accounting.cache_doctor). A log records no tools or system prompt, only their
total (the trajectory's overhead): a change there is `tools or system`; the messages are compared
by their content keys; `compaction_before` marks a compaction's rewrite."""
from __future__ import annotations

from compaction.accounting.cache_doctor import HEAD, CacheMiss, PromptShape, diagnose
from compaction.accounting.cache_model import ttl_of

from agent_core.logs.trajectory import Trajectory
from agent_core.logs.trajectory_sizes import input_total
from agent_core.providers.models_info import cache_model
from agent_core.replay.validate import usual_ttl


def log_misses(traj: Trajectory) -> tuple[CacheMiss, ...]:
    """The misses of `traj`'s main requests, in order, numbered as the log's requests are."""
    default = usual_ttl(traj)
    head = ((HEAD, "head", max(0, traj.overhead_tokens)),)
    previous: PromptShape | None = None
    out: list[CacheMiss] = []
    for req, context in zip(traj.requests, traj.contexts()):
        shape = PromptShape(cache_model(req.model), req.timestamp, ttl_of(req.usage, default), head,
                            tuple(m.key for m in context), tuple(max(0, m.tokens) for m in context),
                            total=input_total(req.usage), compacted=req.compaction_before is not None)
        miss = diagnose(req.index, previous, shape, int(req.usage.get("cache_read", 0)))
        if miss is not None:
            out.append(miss)
        previous = shape
    return tuple(out)
