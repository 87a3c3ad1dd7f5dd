"""A decoder of Claude Code's log lines that builds only what the usage parser reads.

`json` builds every string of a line, the answer's text and a tool's input included, for a parser
that reads a dozen small fields. msgspec, told those fields, skips the rest without building it:
the lines that can hold a record decode in a quarter of the time. Its import costs about 35 ms,
so it is used only for big reads (`worth_it`).

What it gives is what `json` gives for every field the parser reads, or it raises ValueError and
`json` decides (a line msgspec refuses, such as NaN or a lone surrogate, is read exactly as
before); a line with bytes that are not UTF-8 is refused as `json` refuses it.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

# Below this, the import costs more than the decoding saves: it saves about 0.9 ms a MB of log
# (most of a log's bytes are lines never decoded) and costs about 35 ms.
MIN_BYTES = 40 << 20
_decode: Callable[[bytes], dict] | None = None


def worth_it(nbytes: int) -> bool:
    """Is a read of `nbytes` big enough for the fast decoder, and is msgspec installed?"""
    if nbytes < MIN_BYTES:
        return False
    from importlib.util import find_spec  # noqa: PLC0415  (start-up time: 1 ms of every status line call)

    return find_spec("msgspec") is not None


def decoder() -> Callable[[bytes], dict]:
    """`loads(line: bytes) -> dict` with the parser's fields (ValueError when it cannot tell)."""
    global _decode
    if _decode is None:
        _decode = _build()
    return _decode


def _build() -> Callable[[bytes], dict]:
    from agent_core.logs import log_fields  # noqa: PLC0415  (start-up time: msgspec, 35 ms, only for big reads)

    dec, to_builtins, errors = log_fields.decode, log_fields.to_builtins, log_fields.ERRORS

    def loads(line: bytes) -> dict:
        if not line.isascii():
            line.decode()                 # UnicodeDecodeError (a ValueError) where json would refuse it
        try:
            return to_builtins(dec(line))
        except errors as e:
            raise ValueError(str(e)) from None

    return loads
