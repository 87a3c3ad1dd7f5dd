"""The fields of a Claude Code log line that the usage parser reads, as msgspec structs: decoding
into them skips everything else (agent_core/logs/fast_decode.py loads this module for big reads)."""
from __future__ import annotations

from typing import Any, Union

import msgspec

UNSET = msgspec.UNSET


class Message(msgspec.Struct):
    id: Any = UNSET
    model: Any = UNSET
    usage: Any = UNSET


class Data(msgspec.Struct):
    """A `progress` record's payload: a sub-agent's response in `message`."""
    type: Any = UNSET
    agentId: Any = UNSET
    message: Union[Record, None, msgspec.UnsetType] = UNSET    # noqa: UP007


class Record(msgspec.Struct):
    type: Any = UNSET
    subtype: Any = UNSET
    message: Union[Message, None, msgspec.UnsetType] = UNSET   # noqa: UP007
    requestId: Any = UNSET
    uuid: Any = UNSET
    isSidechain: Any = UNSET
    sessionId: Any = UNSET
    timestamp: Any = UNSET
    agentId: Any = UNSET
    costUSD: Any = UNSET
    compactMetadata: Any = UNSET
    isCompactSummary: Any = UNSET
    data: Union[Data, None, msgspec.UnsetType] = UNSET         # noqa: UP007


decode = msgspec.json.Decoder(Record).decode
to_builtins = msgspec.to_builtins
ERRORS = (msgspec.DecodeError, msgspec.ValidationError)
