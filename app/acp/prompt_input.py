"""A session/prompt's content blocks as the one prompt text the loop takes.

Text blocks are the prompt; an embedded resource (a file the editor attached) is appended with its
URI as a header; a resource link is named by its URI (the model may read it with its tools).
Images and audio are refused (initialize does not offer them), as the protocol asks.
"""
from __future__ import annotations

from typing import Any

from acp import RequestError

from agent_core.sessions.valid_text import valid_text


def prompt_text(blocks: list[Any]) -> str:
    parts: list[str] = []
    for b in blocks:
        kind = getattr(b, "type", None)
        if kind == "text":
            parts.append(b.text)
        elif kind == "resource_link":
            parts.append(f"[resource: {b.uri}]")
        elif kind == "resource" and isinstance(getattr(b.resource, "text", None), str):
            parts.append(f"[resource: {b.resource.uri}]\n{b.resource.text}")
        else:
            raise RequestError.invalid_params({"details": f"ctxtui takes text prompts; a {kind} block is not "
                                                          "supported (see initialize's promptCapabilities)"})
    return valid_text("\n\n".join(parts))
