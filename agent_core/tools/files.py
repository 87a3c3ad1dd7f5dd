"""Helpers the file tools share: binary detection and text decoding with messages for the model."""
from __future__ import annotations

from pathlib import Path

from .base import ToolContext, ToolError

SNIFF_BYTES = 8192


def looks_binary(head: bytes) -> bool:
    """A NUL byte in the first block is what git and grep use too."""
    return b"\x00" in head[:SNIFF_BYTES]


def require_file(path: Path, shown: str, ctx: ToolContext) -> None:
    if path.is_dir():
        raise ToolError(f"'{shown}' is a folder, not a file. Use glob (e.g. pattern '{shown}/*') to list it.")
    if not path.exists():
        raise ToolError(f"file not found: '{shown}' (workspace {ctx.workspace}). Use glob to find the right path.")
    if not path.is_file():
        raise ToolError(f"'{shown}' is not a regular file (device, socket or pipe); it cannot be read.")


def read_text(path: Path, shown: str) -> str:
    """The whole file as text, newlines untouched (edit_file writes it back byte-exact)."""
    data = path.read_bytes()
    if looks_binary(data):
        raise ToolError(f"'{shown}' is a binary file; only text files can be read or edited.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ToolError(f"'{shown}' is not UTF-8 text ({e.reason} at byte {e.start}); it cannot be edited safely.") from e
