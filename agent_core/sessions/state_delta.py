"""State changes as small operations: what a `delta` record of the session log carries.

The session's state (pipeline, cost, permissions, turns, the context plot, ...) changes a little
after every model call; writing it whole each time made the log grow with turns × state size.
`diff` turns the step from one state to the next into operations, `apply_op` replays one:

    ["set", path, value]                       the value at path (a list of keys; [part] is a whole part)
    ["del", path]                              the key at path is gone
    ["splice", path, start, n, items, length]  the list at path (`length` items long) has its
                                               items [start, start+n) replaced by `items`

Paths only ever go through objects; lists change by splices. The `length` a splice expects lets a
reader notice that it missed an earlier change (a damaged line) instead of building a wrong list.
"""
from __future__ import annotations

import json
from difflib import SequenceMatcher
from typing import Any

SHIFT_LIMIT = 64         # a window that slid by at most this many items changes by two splices
MATCH_LIMIT = 400        # longer lists that changed otherwise are matched no further than their common ends


def diff(old: Any, new: Any, path: tuple = ()) -> list[list]:
    """The operations that turn `old` into `new` (JSON values); [] when they are equal."""
    if old == new and type(old) is type(new):
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        return _diff_dict(old, new, path)
    if isinstance(old, list) and isinstance(new, list):
        return _splices(old, new, path)
    return [["set", list(path), new]]


def _diff_dict(old: dict, new: dict, path: tuple) -> list[list]:
    # Keys keep their order on replay (a layer may rely on it: the oldest first), so the order the
    # ops leave must be the new one: the kept keys as they were, then the added ones.
    kept = [k for k in old if k in new]
    if kept + [k for k in new if k not in old] != list(new):
        return [["set", list(path), new]]
    ops: list[list] = [["del", [*path, k]] for k in old if k not in new]
    for k, v in new.items():
        if k not in old:
            ops.append(["set", [*path, k], v])
        else:
            ops += diff(old[k], v, (*path, k))
    return ops


def _splices(old: list, new: list, path: tuple) -> list[list]:
    """Splices, last first so each one's indices are those of the list it is applied to. The
    common ends are kept; what is between them changes by a shift (a window that slid: items
    dropped at the head, added at the tail), by matching, or by one replacement."""
    n, m = len(old), len(new)
    p, lim = 0, min(n, m)
    while p < lim and _same(old[p], new[p]):
        p += 1
    s = 0
    while s < lim - p and _same(old[n - 1 - s], new[m - 1 - s]):
        s += 1
    codes = [(p + i1, p + i2, p + j1, p + j2) for i1, i2, j1, j2 in _middle(old[p:n - s], new[p:m - s])]
    ops, length = [], n
    for i1, i2, j1, j2 in reversed(codes):
        ops.append(["splice", list(path), i1, i2 - i1, new[j1:j2], length])
        length += (j2 - j1) - (i2 - i1)
    return ops


def _middle(a: list, b: list) -> list[tuple[int, int, int, int]]:
    """(i1, i2, j1, j2) ranges: a[i1:i2] becomes b[j1:j2]."""
    if not a or not b:
        return [(0, len(a), 0, len(b))] if a or b else []
    for k in range(1, min(len(a), SHIFT_LIMIT) + 1):
        if k < len(a) and _same(a[k], b[0]) and a[k:] == b[:len(a) - k]:
            return [(0, k, 0, 0), (len(a), len(a), len(a) - k, len(b))]
    if len(a) > MATCH_LIMIT or len(b) > MATCH_LIMIT:
        return [(0, len(a), 0, len(b))]
    keys: dict[tuple, int] = {}
    ka = [keys.setdefault(_key(x), len(keys)) for x in a]
    kb = [keys.setdefault(_key(x), len(keys)) for x in b]
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes()
            if tag != "equal"]


def _same(x: Any, y: Any) -> bool:
    return x == y and type(x) is type(y)


def _key(x: Any) -> tuple:
    """A hashable stand-in, equal only for items of the same type and value."""
    if x is None or isinstance(x, (str, int, float)):
        return type(x).__name__, x
    return "json", json.dumps(x, sort_keys=True, default=str)


def apply_op(state: dict, op: Any) -> str:
    """Apply one operation to `state` in place and return the part it changed (the path's first
    key). ValueError when it does not apply: a malformed op, a path that is not there, a list of
    another length than the one the op was made for."""
    if not isinstance(op, list) or len(op) < 2 or op[0] not in ("set", "del", "splice"):
        raise ValueError("not a state operation")
    kind, path = op[0], op[1]
    if not isinstance(path, list) or not path:
        raise ValueError("its path is not a list of keys")
    parent: Any = state
    for k in path[:-1]:
        parent = parent.get(k) if isinstance(k, str) else None
        if not isinstance(parent, dict):
            raise ValueError(f"{str(path)[:80]}: no such object")
    key = path[-1]
    if not isinstance(key, str):
        raise ValueError("its path is not a list of keys")
    if kind == "set" and len(op) == 3:
        parent[key] = op[2]
    elif kind == "del" and len(op) == 2:
        parent.pop(key, None)
    elif kind == "splice" and len(op) == 6:
        _splice(parent.get(key), op, path)
    else:
        raise ValueError(f"a {kind!r} operation of the wrong shape")
    return path[0]


def _splice(target: Any, op: list, path: list) -> None:
    _, _, start, n, items, length = op
    if not isinstance(target, list):
        raise ValueError(f"{str(path)[:80]}: not a list")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, n, length)) or \
            not isinstance(items, list):
        raise ValueError("a splice of the wrong shape")
    if len(target) != length or not 0 <= start <= start + n <= length:
        raise ValueError(f"{str(path)[:80]}: the list has {len(target)} items, the change was made "
                         f"for {length}")
    target[start:start + n] = items
