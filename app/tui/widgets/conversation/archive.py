"""The paged-out messages of a conversation, kept compressed.

A long session pages out about ten messages a turn; each record holds the message's text (an
answer, a tool call's input and result preview, a compaction's summary), about 1.3 KB pickled on
the demo and far more on real work, for the whole session. They are read back only when the user
scrolls up past the mounted messages, so each is kept as a zlib-compressed pickle (a third of
the bytes), and unpacked when it is built again. The records are the conversation's own objects,
never read from outside, so unpickling them is safe. A record still being written to (a tool call
whose result has not come: the conversation updates the record itself) is kept as it is.

`Archive` behaves as the list of records it replaces: `len`, indexing and slices, iteration,
`extend`, `del` of a slice, `clear`."""
from __future__ import annotations

import pickle
import zlib
from typing import Any, Iterable, Iterator, overload

LEVEL = 1       # the fastest level: most of the gain, a few microseconds a record


def _pack(record: Any) -> bytes:
    return zlib.compress(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL), LEVEL)


def _unpack(blob: Any) -> Any:
    return pickle.loads(zlib.decompress(blob)) if isinstance(blob, bytes) else blob


class Archive:
    """Records, oldest first, stored compressed."""

    __slots__ = ("_blobs",)

    def __init__(self, records: Iterable[Any] = ()) -> None:
        self._blobs: list[Any] = [_pack(r) for r in records]   # bytes, or a record still open

    def __len__(self) -> int:
        return len(self._blobs)

    def __bool__(self) -> bool:
        return bool(self._blobs)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [_unpack(b) for b in self._blobs[index]]
        return _unpack(self._blobs[index])

    def __delitem__(self, index: int | slice) -> None:
        del self._blobs[index]

    def __iter__(self) -> Iterator[Any]:
        return (_unpack(b) for b in self._blobs)

    def extend(self, records: Iterable[Any], open_records: Iterable[Any] = ()) -> None:
        """Add records at the end; those in `open_records` (by identity) stay unpacked."""
        still_open = {id(r) for r in open_records}
        self._blobs.extend(r if id(r) in still_open else _pack(r) for r in records)

    def clear(self) -> None:
        self._blobs.clear()

    @property
    def nbytes(self) -> int:
        """The compressed bytes held."""
        return sum(len(b) for b in self._blobs if isinstance(b, bytes))
