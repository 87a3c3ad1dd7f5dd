"""Request checks the real Messages API makes, answered with its error shapes (HTTP 400/404).

History invariants come from `compaction.validate_history` (the project's judge of them); the
rest checks what the loop could plausibly get wrong: model, max_tokens, system, tools, the
number of cache breakpoints, unknown fields.
"""
from __future__ import annotations

import re

from compaction import validate_history

TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_BREAKPOINTS = 4
KNOWN_FIELDS = {
    "model", "messages", "max_tokens", "system", "tools", "tool_choice", "stream", "temperature", "top_p",
    "top_k", "stop_sequences", "metadata", "thinking", "cache_control", "service_tier", "output_config",
    "container", "mcp_servers", "context_management", "inference_geo", "speed", "diagnostics",
}
COUNT_FIELDS = KNOWN_FIELDS - {"max_tokens", "stream", "temperature", "top_p", "top_k", "stop_sequences",
                               "metadata", "service_tier"}


class RequestError(Exception):
    def __init__(self, status: int, type: str, message: str) -> None:
        super().__init__(message)
        self.status, self.type, self.message = status, type, message


def _bad(msg: str) -> RequestError:
    return RequestError(400, "invalid_request_error", msg)


def count_cache_control(obj) -> int:
    if isinstance(obj, dict):
        return int("cache_control" in obj) + sum(count_cache_control(v) for v in obj.values())
    if isinstance(obj, list):
        return sum(count_cache_control(v) for v in obj)
    return 0


def _has_tool_blocks(messages: list) -> bool:
    for m in messages:
        c = m.get("content") if isinstance(m, dict) else None
        if isinstance(c, list) and any(isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result")
                                       for b in c):
            return True
    return False


def validate_request(body, *, count_only: bool = False, max_output: int | None = None,
                     models: set[str] | None = None, require_tools_for_tool_blocks: bool = False) -> None:
    """Raise RequestError for the first problem the API would report."""
    if not isinstance(body, dict):
        raise _bad("request body must be a JSON object")
    allowed = COUNT_FIELDS if count_only else KNOWN_FIELDS
    for k in body:
        if k not in allowed:
            raise _bad(f"{k}: Extra inputs are not permitted")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("model: Field required")
    if models is not None and model not in models:
        raise RequestError(404, "not_found_error", f"model: {model}")
    if not count_only:
        mt = body.get("max_tokens")
        if not isinstance(mt, int) or isinstance(mt, bool):
            raise _bad("max_tokens: Field required" if mt is None else "max_tokens: Input should be a valid integer")
        if mt < 1:
            raise _bad("max_tokens: Input should be greater than or equal to 1")
        if max_output is not None and mt > max_output:
            raise _bad(f"max_tokens: {mt} > {max_output}, which is the maximum allowed number of output tokens "
                       f"for {model}")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise _bad("messages: Field required" if messages is None else "messages: Input should be a valid list")
    if any(not isinstance(m, dict) for m in messages):
        raise _bad("messages: each message must be an object")
    problems = validate_history(messages)
    if problems:
        raise _bad("; ".join(problems))
    system = body.get("system")
    if system is not None and not isinstance(system, str):
        if not isinstance(system, list):
            raise _bad("system: Input should be a valid string or a list of text blocks")
        for i, b in enumerate(system):
            if not isinstance(b, dict) or b.get("type") != "text" or not isinstance(b.get("text"), str):
                raise _bad(f"system.{i}: Input should be a text block")
            if not b["text"].strip():
                raise _bad(f"system.{i}: text content blocks must be non-empty")
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise _bad("tools: Input should be a valid list")
        names: set[str] = set()
        for i, t in enumerate(tools):
            if not isinstance(t, dict):
                raise _bad(f"tools.{i}: Input should be an object")
            if t.get("type") not in (None, "custom"):
                continue  # server tools (web_search_…) have their own shapes
            name = t.get("name")
            if not isinstance(name, str) or not TOOL_NAME_RE.match(name):
                raise _bad(f"tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
            schema = t.get("input_schema")
            if not isinstance(schema, dict):
                raise _bad(f"tools.{i}.custom.input_schema: Field required")
            if schema.get("type") != "object":
                raise _bad(f"tools.{i}.custom.input_schema.type: Input should be 'object'")
            if "description" in t and not isinstance(t["description"], str):
                raise _bad(f"tools.{i}.custom.description: Input should be a valid string")
            if name in names:
                raise _bad("tools: Tool names must be unique.")
            names.add(name)
    if require_tools_for_tool_blocks and not tools and _has_tool_blocks(messages):
        raise _bad("Requests which include `tool_use` or `tool_result` blocks must define tools.")
    n = count_cache_control(messages) + count_cache_control(system) + count_cache_control(tools)
    if n > MAX_BREAKPOINTS:
        raise _bad(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {n}.")
    thinking = body.get("thinking")
    if thinking is not None and not count_only:
        if not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "disabled", "adaptive"):
            raise _bad("thinking: Input tag does not match any of the expected tags: 'enabled', 'disabled', "
                       "'adaptive'")
        if thinking.get("type") == "enabled":
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024:
                raise _bad("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
            if budget >= body["max_tokens"]:
                raise _bad("`max_tokens` must be greater than `thinking.budget_tokens`.")
