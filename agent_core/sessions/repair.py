"""Making a logged history valid to send again after a crash or a damaged log.

A run killed during a tool leaves a call without a result (the API refuses every later request),
a damaged log can hold a result whose call is gone, and tool output can hold invalid Unicode.
`repair_history` fixes all three; `load_session` applies it when a session is resumed.
"""
from __future__ import annotations

from typing import Any, Sequence

from compaction.entry import Entry, tool_result_block

from agent_core.sessions.valid_text import valid_entry

INTERRUPTED_RESULT = ("Interrupted: ctxtui stopped before this tool finished (the run was killed or crashed), so "
                      "its outcome is unknown. Check its effects before running it again.")


def _tool_use_ids(e: Entry) -> list[str]:
    return [b["id"] for b in e.content if isinstance(b, dict) and b.get("type") == "tool_use"
            and isinstance(b.get("id"), str)]


def _is_result(b: Any) -> bool:
    return isinstance(b, dict) and b.get("type") == "tool_result"


def _interrupted_entry(ids: list[str]) -> Entry:
    return Entry({"role": "user", "content": [tool_result_block(i, INTERRUPTED_RESULT, is_error=True) for i in ids]},
                 meta={"repaired": "interrupted"})


MISSING_START = ("[ctxtui: the start of this conversation could not be read back from its session log; "
                 "what follows is the part that could.]")


def _empty_text(b: Any) -> bool:
    return isinstance(b, dict) and b.get("type") == "text" and not str(b.get("text", "")).strip()


def _without_empty_text(entries: Sequence[Entry]) -> tuple[list[Entry], int]:
    """Sent entries less their empty text blocks (the API refuses them), and less the entries left
    with no content at all; the number of entries changed or dropped."""
    out, n = [], 0
    for e in entries:
        if not e.sent or not any(_empty_text(b) for b in e.content) and e.content:
            out.append(e)
            continue
        n += 1
        keep = [b for b in e.content if not _empty_text(b)]
        if keep:
            out.append(e.with_content(keep))
    return out, n


def _opens_with_compaction(e: Entry) -> bool:
    return e.role == "assistant" and bool(e.content) and isinstance(e.content[0], dict) \
        and e.content[0].get("type") == "compaction"


def _without_reused_ids(e: Entry, seen_calls: set[str], calls: list[str]) -> tuple[Entry | None, int]:
    """`e` without the tool calls whose id an earlier call (or one before it in `e`) already used,
    and how many were dropped; None when nothing is left of it."""
    ids = _tool_use_ids(e)
    if not any(i in seen_calls or ids.count(i) > 1 or i in calls for i in ids):
        return e, 0
    keep, taken, reused = [], set(calls), 0
    for b in e.content:
        bid = b.get("id") if isinstance(b, dict) and b.get("type") == "tool_use" else None
        if bid is not None and (bid in seen_calls or bid in taken):
            reused += 1
            continue
        if bid is not None:
            taken.add(bid)
        keep.append(b)
    return (e.with_content(keep) if keep else None), reused


def _known_results(e: Entry, calls: list[str], answered: set[str]) -> list:
    """The blocks of a user entry less the results that answer no open call or answer one twice;
    records the ones kept in `answered`."""
    keep = []
    for b in e.content:
        if _is_result(b):
            uid = b.get("tool_use_id")
            if uid not in calls or uid in answered:
                continue
            answered.add(uid)
        keep.append(b)
    return keep


def _open_with_a_note(out: list[Entry]) -> bool:
    """When the first sent entry is not the user's (the log lost its start), put a note first."""
    first = next((e for e in out if e.sent), None)
    if first is None or first.role == "user" or _opens_with_compaction(first):
        return False
    out.insert(0, Entry({"role": "user", "content": [{"type": "text", "text": MISSING_START}]},
                        meta={"repaired": "missing_start"}))
    return True


def repair_history(entries: Sequence[Entry]) -> tuple[list[Entry], list[str]]:
    """The history made valid to send, and a note per repair. A run killed during a tool leaves
    its call without a result (the API then refuses every request with HTTP 400): each such call
    is answered with an "Interrupted" error result, as a cancel does. A tool result whose call is
    gone (a damaged log) is dropped, and invalid Unicode is replaced. Sent entries of one role are
    one API message (see `compaction.project`), so calls and results are matched per message.
    What only a damaged log holds is mended too: empty text blocks and empty messages are dropped,
    a tool call whose id an earlier call already used is dropped (with its result), and a history
    whose first message is not the user's (its start was lost) opens with a note saying so."""
    notes: list[str] = []
    fixed = [valid_entry(e) for e in entries]
    n_text = sum(a is not b for a, b in zip(fixed, entries))
    if n_text:
        notes.append(f"{n_text} entr{'y' if n_text == 1 else 'ies'} held text that is not valid Unicode; "
                     "replaced with U+FFFD")
    fixed, n_empty = _without_empty_text(fixed)
    if n_empty:
        notes.append(f"{n_empty} entr{'y' if n_empty == 1 else 'ies'} held empty text or no content; "
                     "the empty parts dropped")
    out: list[Entry] = []
    calls: list[str] = []        # tool_use ids of the assistant message being answered
    answered: set[str] = set()
    insert_at = 0                # where that message's missing results go (right after it)
    role = None                  # role of the last sent entry
    interrupted = dropped = reused = 0
    seen_calls: set[str] = set()   # tool_use ids of every earlier assistant message

    def answer_missing() -> None:
        nonlocal interrupted
        missing = [i for i in calls if i not in answered]
        if missing:
            out.insert(insert_at, _interrupted_entry(missing))
            interrupted += len(missing)

    for e in fixed:
        if not e.sent:
            out.append(e)
            continue
        if e.role == "assistant":
            if role != "assistant":
                answer_missing()
                seen_calls.update(calls)
                calls, answered = [], set()
            kept, n_reused = _without_reused_ids(e, seen_calls, calls)
            reused += n_reused
            if kept is None:
                continue      # nothing left of it: the role of the last sent entry is unchanged
            e = kept
            calls += _tool_use_ids(e)
            out.append(e)
            insert_at = len(out)
        else:
            keep = _known_results(e, calls, answered)
            dropped += len(e.content) - len(keep)
            if keep:
                out.append(e if len(keep) == len(e.content) else e.with_content(keep))
        role = e.role
    answer_missing()
    if _open_with_a_note(out):
        notes.append("the history did not start with a user message (its start was lost); a note opens it")
    if reused:
        notes.append(f"{reused} tool call{'s' if reused != 1 else ''} reusing an earlier call's id dropped")
    if interrupted:
        notes.append(f"{interrupted} tool call{'s' if interrupted != 1 else ''} left without a result (the run "
                     "stopped during the tool) answered as interrupted")
    if dropped:
        notes.append(f"{dropped} tool result{'s' if dropped != 1 else ''} whose call is not in the history dropped")
    return out, notes
