"""`run_replay(options, progress)`: read the logs once, replay every trajectory under every policy,
and return the report (a `ReplayReport`, report_model.py). Pure computation, no model call; `progress(label, fraction)`
is called as the work advances so a screen can show it. A log that cannot be read (a FIFO, a
symlink to a device, a symlink loop, no permission) is skipped: the report lists it in
`skipped_files` (path, reason) and in its notes, and the other logs are replayed.

Progress says where the work is — "reading 34 MB of 247 MB", then "SESSION.jsonl · policy 2 of 4
(cc) · request 1,200 of 4,000" — and its fraction is the share of the work done (reading is
`READ_SHARE`, then every request of every policy weighs the same). It is called at most every
`PROGRESS_INTERVAL` seconds (and once at 100%), however often the work advances, so a caller may
draw every call.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Sequence

from compaction.accounting.cache_doctor import CacheMiss as DoctorMiss
from compaction.presets import summarize_config
from compaction.summarizing import SummarizeConfig

from agent_core.logs.trajectory import Trajectory
from agent_core.logs.trajectory_read import read_trajectories
from agent_core.pricing.pricer import Pricer
from agent_core.replay.cache_doctor_log import log_misses
from agent_core.replay.content import ContentIndex
from agent_core.replay.engine_policy import EnginePolicy
from agent_core.replay.options import PolicySpec, ReplayOptions
from agent_core.replay.policies import NoCompaction
from agent_core.replay.policy_config import engine_config
from agent_core.replay.policy_server import NOTE as SERVER_NOTE, SERVER, server_policy
from agent_core.replay.references import ReferenceIndex
from agent_core.replay.recorded import covered_sessions, recorded
from agent_core.replay.report import build_report, logged_cost, session_result
from agent_core.replay.report_model import CacheCheck, ReplayReport, SkippedFile
from agent_core.replay.simulate import Policy, PolicyRun, simulate
from agent_core.replay.validate import validate
from agent_core.replay.summary_size import SummarySize, summary_size
from agent_core.replay.window import replay_limits

Progress = Callable[[str, float], None]
READ_SHARE = 0.2            # of the progress bar, for reading the logs
PROGRESS_INTERVAL = 0.1     # seconds between two progress calls, at most


def megabytes(n: int) -> str:
    return f"{n / 1e6:,.0f} MB" if n >= 10e6 else f"{n / 1e6:,.1f} MB"


class Throttled:
    """`progress`, called at most every `interval` seconds (the first call and 100% always pass)."""

    def __init__(self, progress: Progress | None, interval: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.progress, self.clock = progress, clock
        self.interval = PROGRESS_INTERVAL if interval is None else interval
        self.last: float | None = None

    def __call__(self, label: str, fraction: float) -> None:
        if self.progress is None:
            return
        fraction = max(0.0, min(1.0, fraction))
        now = self.clock()
        if self.last is not None and now - self.last < self.interval and fraction < 1.0:
            return
        self.last = now
        self.progress(label, fraction)


def make_policy(spec: PolicySpec, traj: Trajectory, *, window: int, ttl: str, size: SummarySize,
                pricer: Pricer) -> tuple[Policy, int]:
    """The policy object for one trajectory and the window its overflows are counted against."""
    if spec.base == "none" and not spec.settings:
        return NoCompaction(ttl, spec.name), window     # the `none` preset, without running an engine that does nothing
    if spec.base == SERVER:
        return server_policy(spec.name, traj, window=window, ttl=ttl, size=size)
    config = engine_config(spec, traj.model, window, ttl, traj.overhead_tokens, pricer)
    summarize = summarize_config(SummarizeConfig(require_transcript=False), spec.base)
    return (EnginePolicy(config, summary_tokens=size.tokens, name=spec.name, summarize=summarize),
            config.budget.context_window)


OnRequest = Callable[[int, str, int], None]     # (policy's index from 0, its name, requests done)


def replay_trajectory(traj: Trajectory, options: ReplayOptions, pricer: Pricer,
                      on_request: OnRequest | None = None) -> tuple[dict[str, PolicyRun], int, SummarySize]:
    window = replay_limits(traj, options.window).context_window
    size = summary_size(traj, window)
    refs = ReferenceIndex(traj)
    content = ContentIndex(traj)
    runs: dict[str, PolicyRun] = {}
    for i, spec in enumerate(options.policies):
        tell = None
        if on_request is not None:
            def tell(n: int, i: int = i, name: str = spec.name) -> None:
                on_request(i, name, n)
            tell(0)
        policy, policy_window = make_policy(spec, traj, window=window, ttl=options.ttl, size=size, pricer=pricer)
        runs[spec.name] = simulate(traj, policy, window=policy_window, pricer=pricer, refs=refs, on_request=tell,
                                  content=content)
    return runs, window, size


def doctor_of(traj: Trajectory) -> tuple[DoctorMiss, ...]:
    """The cache doctor on the log's own requests (cache_doctor_log.py); a synthetic trajectory
    logged no cache reads."""
    return () if traj.source == "synthetic" else log_misses(traj)


def validation_of(traj: Trajectory) -> CacheCheck:
    """The cache simulator checked against the log's own cache reads and writes (validate.py); a
    synthetic trajectory has nothing logged to check against."""
    if traj.source == "synthetic":
        return CacheCheck()
    return validate(traj).check()


def skip_reason(error: OSError) -> str:
    """Why a log was not read, in words: "not a regular file (a FIFO (named pipe))",
    "Too many levels of symbolic links", "Permission denied"."""
    reason = str(error.strerror or error)
    return reason.removesuffix("; skipped")


def load(options: ReplayOptions, progress: Progress | None,
         skipped: list[SkippedFile] | None = None) -> list[Trajectory]:
    """Every trajectory with at least one request in the options' paths, read once; the logs that
    could not be read are appended to `skipped`, or raise without it."""
    def on_bytes(done: int, total: int) -> None:
        if progress is not None:
            progress(f"reading {megabytes(done)} of {megabytes(total)}", READ_SHARE * (done / total if total else 1.0))

    def on_skip(path: Path, error: OSError) -> None:
        assert skipped is not None
        skipped.append(SkippedFile(str(path), skip_reason(error)))
    return [t for t in read_trajectories(options.paths, on_bytes, None if skipped is None else on_skip)
            if t.requests]


def run_replay(options: ReplayOptions, progress: Progress | None = None, *,
               trajectories: Sequence[Trajectory] | None = None) -> ReplayReport:
    """The report for `options`; `trajectories` replaces reading `options.paths` (tests, bench)."""
    tell = Throttled(progress)
    skipped: list[SkippedFile] = []
    trajs = list(trajectories) if trajectories is not None else load(options, tell, skipped)
    pricer = Pricer()
    sessions = []
    notes: list[str] = []
    n_policies = len(options.policies)
    # the work: every request under every policy, and one more round of them for the validation
    total = max(1, sum(len(t.requests) for t in trajs) * (n_policies + 1))
    done = 0
    covered = covered_sessions(trajs)
    logged = [logged_cost(t, pricer) for t in trajs]
    per_session: dict[str, float | None] = {}
    for t, usd in zip(trajs, logged):
        before = per_session.get(t.session_id, 0.0)
        per_session[t.session_id] = None if before is None or usd is None else before + usd
    for k, traj in enumerate(trajs):
        name = Path(traj.path).name + (f" [{traj.agent_id}]" if traj.agent_id else "")
        where = name if len(trajs) == 1 else f"{name} ({k + 1} of {len(trajs)})"
        count = len(traj.requests)

        def on_request(i: int, policy: str, n: int, where: str = where, count: int = count, base: int = done) -> None:
            tell(f"{where} · policy {i + 1} of {n_policies} ({policy}) · request {n:,} of {count:,}",
                 READ_SHARE + (1 - READ_SHARE) * (base + i * count + n) / total)
        runs, window, size = replay_trajectory(traj, options, pricer, on_request)
        done += n_policies * count
        tell(f"{where} · checking the cache model against the log",
             READ_SHARE + (1 - READ_SHARE) * done / total)
        rec = recorded(traj, logged[k], pricer, covered=traj.session_id in covered,
                       logged_session=per_session.get(traj.session_id) if traj.agent_id is None else None)
        sessions.append(session_result(traj, runs, window=window, size=size, validation=validation_of(traj),
                                       price=pricer, cache_doctor=doctor_of(traj), logged=logged[k], recorded=rec))
        done += count
        note = f"{name}: {size.describe()}."
        if rec.note:
            note += f" Recorded: {rec.note}."
        if traj.skipped_lines:
            note += f" {traj.skipped_lines} unreadable line(s) skipped."
        notes.append(note)
        unpriced = sorted({m for r in runs.values() for m in r.unpriced_models})
        if unpriced:
            notes.append(f"{name}: no price data for {', '.join(unpriced)}; its calls count $0.")
    tell("done", 1.0)
    if any(p.base == SERVER for p in options.policies):
        notes.append(SERVER_NOTE)
    notes += [f"{s.path}: not read ({s.reason})." for s in skipped]
    return build_report(sessions, options.policy_names(), window=options.window, ttl=options.ttl, notes=notes,
                        skipped_files=tuple(skipped))
