"""`/rewind` putting files back: each file the agent changed at or after the chosen prompt returns
to its copy from just before that prompt (a file the agent created is removed). Nothing is written
until the user has seen `Restore.diff` and said yes.

Every path is confined to the workspace again at restore time, and written with `write_atomic`,
so a symlink or hard link planted since (by bash, say) is refused rather than followed, and a
failure leaves that file as it was. Each file is restored on its own: one that fails is reported
and the others go on. The preview reads the files as they are now through `read_now`: a file that
is now a folder, a FIFO or a symlink is never opened (a symlink's target may be outside the
workspace, a FIFO would block) and is listed as not restored, saying what it is now."""
from __future__ import annotations

import os
from dataclasses import dataclass

from agent_core.tools.base import ToolContext, ToolError
from agent_core.tools.changed_files import LargeNow, NotRead, read_now, unified_diff
from agent_core.tools.file_history import Copy, FileHistory
from agent_core.tools.safe_write import check_target, write_atomic
from agent_core.tools.sandbox import resolve


@dataclass(frozen=True)
class Restore:
    copy: Copy
    diff: str               # what restoring does: now -> the copy
    problem: str | None     # why it cannot be restored (then it is skipped)


def restore_plan(history: FileHistory, prompt_uuid: str) -> list[Restore] | None:
    """What a rewind to that prompt would put back; None when its file changes are unknown."""
    copies = history.since(prompt_uuid)
    if copies is None:
        return None
    plan = []
    for path, copy in copies.items():
        if copy.too_large:
            plan.append(Restore(copy, "", "it was too large to keep a copy of"))
            continue
        try:
            was = history.content(copy)
        except OSError:
            plan.append(Restore(copy, "", "no copy of it could be kept (a notice said why)"
                                if copy.backup is None else "its copy is gone"))
            continue
        try:
            now = read_now(path)
        except LargeNow as e:       # restorable, but too large to show
            plan.append(Restore(copy, f"{copy.shown}: {e.note}; restoring "
                                f"{'removes it' if was is None else 'puts its earlier copy back'}\n", None))
            continue
        except NotRead as e:        # a folder, a FIFO, a symlink...: neither shown nor restored
            plan.append(Restore(copy, "", e.note))
            continue
        if now != was:
            plan.append(Restore(copy, unified_diff(copy.shown, now, was, label_was="now", label_now="restored"),
                                None))
    return plan


def apply_restore(plan: list[Restore], ctx: ToolContext, history: FileHistory) -> list[str]:
    """Restore each file of the plan; one line per file saying what happened."""
    out = []
    for r in plan:
        if r.problem:
            out.append(f"{r.copy.shown}: not restored, {r.problem}")
            continue
        try:
            path = resolve(ctx, r.copy.shown)
            was = history.content(r.copy)
            if was is None:
                if check_target(path, r.copy.shown) is not None:
                    os.unlink(path)
                out.append(f"{r.copy.shown}: removed (the agent created it)")
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(path, was, r.copy.shown)
                out.append(f"{r.copy.shown}: restored")
        except ToolError as e:
            out.append(f"{r.copy.shown}: not restored, {e}")
        except OSError as e:
            out.append(f"{r.copy.shown}: not restored, {e.strerror or e}")
    return out
