"""Turn whatever a model call raised into a `ModelError` a user can act on.

The SDK has already retried what it retries (429, 5xx, 529, connection errors) by the time an
exception reaches us, so the message says so and tells the user the next step. Secrets (the API
key) are scrubbed from every message, and a base URL is shown without credentials or query.

This module never imports the SDK: the loop reaches it on every run, the demo model's too, and the
SDK takes a second or more to import (agent_core/providers/anthropic_client.py loads it when a real
model is first used). The SDK's exceptions are recognised by the names of their classes, as the
HTTP layer's are: a class named `APIStatusError` (say) defined in the `anthropic` package, anywhere
in the exception's class hierarchy, so the SDK's subclasses (`RateLimitError`...) count too.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Iterable
from urllib.parse import urlsplit

from compaction.scrub import scrub

from agent_core.providers.model import ModelError

PROMPT_TOO_LONG_RE = re.compile(r"prompt is too long:\s*(\d+)\s*tokens\s*>\s*(\d+)\s*maximum", re.I)
# The API's answer when the input fits but input + max_tokens does not: a prompt-too-long case too.
MAX_TOKENS_OVER_WINDOW_RE = re.compile(r"input length and `?max_tokens`? exceed context limit:\s*(\d+)\s*\+\s*"
                                       r"(\d+)\s*>\s*(\d+)", re.I)
MAX_API_MESSAGE = 500

# Exceptions the SDK's stream helpers raise on bytes that are not a well-formed event stream
# (bad JSON, events out of order, a delta for a block that never started).
MALFORMED_STREAM_ERRORS = (ValueError, RuntimeError, IndexError, KeyError)


class TruncatedStream(Exception):
    """The event stream ended before `message_stop` (the connection closed mid-answer)."""


def parse_prompt_too_long(text: str) -> tuple[int, int] | None:
    """(tokens, maximum) from the API's `prompt is too long: N tokens > M maximum`, else None."""
    m = PROMPT_TOO_LONG_RE.search(text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def parse_max_tokens_over_window(text: str) -> tuple[int, int, int] | None:
    """(input, max_tokens, window) from the API's `input length and `max_tokens` exceed context
    limit: N + M > W`, else None."""
    m = MAX_TOKENS_OVER_WINDOW_RE.search(text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` through the one scrubber, with these values scrubbed as well."""
    return scrub(text, secrets)


def display_url(url: Any) -> str:
    """A URL fit for a message: scheme, host, port and path only (no user:password, no query)."""
    try:
        p = urlsplit(str(url))
        host = p.hostname or ""
        port = f":{p.port}" if p.port else ""
        return f"{p.scheme}://{host}{port}{p.path}".rstrip("/") or str(url)
    except Exception:
        return "the configured base URL"


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds the server asked us to wait (`retry-after-ms`, or `retry-after` as seconds or a date)."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
    except (TypeError, ValueError):
        pass
    ra = headers.get("retry-after")
    if ra is None:
        return None
    try:
        return max(0.0, float(ra))
    except (TypeError, ValueError):
        pass
    import email.utils  # noqa: PLC0415  (an HTTP date here is rare; the package is start-up time)
    parsed = email.utils.parsedate_tz(ra)
    if parsed is None:
        return None
    return max(0.0, float(email.utils.mktime_tz(parsed) - time.time()))


def _api_message(exc: Any) -> str:
    msg = getattr(exc, "api_message", None)
    if not msg:
        body = getattr(exc, "body", None)
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            msg = body["error"].get("message")
        elif isinstance(body, str):
            msg = body
    msg = str(msg or "").strip().rstrip(".")
    if len(msg) > MAX_API_MESSAGE:
        msg = msg[:MAX_API_MESSAGE] + "…"
    return msg or "no details given"


def _error_type(exc: Any) -> str | None:
    t = getattr(exc, "type", None)
    if isinstance(t, str):
        return t
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("type")
    return None


def _retried(retries: int | None) -> str:
    if not retries:
        return ""
    return f" The request was already retried {retries} time{'s' if retries != 1 else ''}."


def _status_error(exc: Any, *, retries: int | None, model: str | None, model_from: str | None = None) -> ModelError:
    status = getattr(exc, "status_code", None)
    etype = _error_type(exc)
    api_msg = _api_message(exc)
    headers = getattr(getattr(exc, "response", None), "headers", None)
    ra = retry_after_seconds(headers)
    rid = getattr(exc, "request_id", None)
    ref = f" (request id {rid})" if rid else ""
    # A mid-stream `event: error` arrives with HTTP 200; its error type says what it was.
    shown = status if status and status != 200 else None
    if shown is None:
        retries = None  # the SDK never retries an error that arrives inside a started stream
    code = f"HTTP {shown}" if shown else (etype or "stream error")
    retry_hint = f"wait {ra:g} s" if ra is not None else "wait a little"

    if status in (401, 403) or etype in ("authentication_error", "permission_error"):
        return ModelError("auth", f"The API refused the credentials ({code}: {api_msg}). Check ANTHROPIC_API_KEY "
                                  f"(and ANTHROPIC_BASE_URL if you use a proxy){ref}.", False, None, status)
    if status == 402 or etype == "billing_error":
        return ModelError("auth", f"The API refused the call for billing reasons ({code}: {api_msg}). Check the "
                                  f"plan and credit of the account behind ANTHROPIC_API_KEY{ref}.", False, None, status)
    if status == 429 or etype == "rate_limit_error":
        return ModelError("rate_limit", f"Rate limited by the API ({code}: {api_msg}).{_retried(retries)} "
                                        f"{retry_hint.capitalize()} and try again, or send requests less often{ref}.",
                          True, ra, status)
    if status == 529 or etype == "overloaded_error":
        return ModelError("overloaded", f"The API is overloaded ({code}: {api_msg}).{_retried(retries)} "
                                        f"{retry_hint.capitalize()} and try again{ref}.", True, ra, status)
    if parse_max_tokens_over_window(api_msg):
        return ModelError("prompt_too_long", f"The request and the room for the answer do not fit the model's "
                                             f"context window ({api_msg}). Run /compact, or set "
                                             f"CTXTUI_CONTEXT_WINDOW to the model's real window{ref}.",
                          False, None, status)
    if parse_prompt_too_long(api_msg) or "prompt is too long" in api_msg.lower():
        return ModelError("prompt_too_long", f"The request does not fit the model's context window ({api_msg}). "
                                             "Run /compact, or set CTXTUI_CONTEXT_WINDOW to the model's real window"
                                             f"{ref}.", False, None, status)
    if status == 413 or etype == "request_too_large":
        return ModelError("prompt_too_long", f"The request is too large for the API ({code}: {api_msg}). Run "
                                             f"/compact to shrink the conversation{ref}.", False, None, status)
    if status == 404 or etype == "not_found_error":
        name = f" '{model}'" if model else ""
        set_by = f"set with {model_from}" if model_from else "CTXTUI_MODEL or --model"
        return ModelError("bad_request", f"The API could not find what was asked ({code}: {api_msg}). Check the "
                                         f"model name{name} ({set_by}) and "
                                         f"ANTHROPIC_BASE_URL{ref}.",
                          False, None, status)
    if status == 408 or etype == "timeout_error":
        return ModelError("connection", f"The API timed out ({code}: {api_msg}).{_retried(retries)} Try again"
                                        f"{ref}.", True, ra, status)
    if (status is not None and status >= 500) or etype == "api_error":
        return ModelError("server", f"The API had an internal error ({code}: {api_msg}).{_retried(retries)} "
                                    f"{retry_hint.capitalize()} and try again{ref}.", True, ra, status)
    if status == 409:
        return ModelError("server", f"The API reported a conflict ({code}: {api_msg}). Try again{ref}.",
                          True, ra, status)
    return ModelError("bad_request", f"The API rejected the request ({code}: {api_msg}). This is likely a bug in "
                                     f"how ctxtui built the request; the session log has the history{ref}.",
                      False, None, status)


def classify(exc: BaseException, *, secrets: Iterable[str | None] = (), base_url: Any = None,
             retries: int | None = None, model: str | None = None, connect_timeout: float | None = None,
             idle_timeout: float | None = None, started: bool = False, model_from: str | None = None) -> ModelError:
    """The `ModelError` for `exc`; `retries` is how many times the SDK was allowed to retry, and
    the timeouts are the client's, named in a timeout's message with the setting that sets them.
    `started`: the answer had begun to stream, so the SDK did not retry whatever broke it.
    `model_from`: what set the model when the user did not use a flag (the TUI's `/model`), named
    when the API does not know the model."""
    if started:
        exc = _mid_stream_cause(exc)
    err = _classify(exc, base_url=base_url, retries=retries, model=model,
                    timeouts=Timeouts(connect_timeout, idle_timeout), model_from=model_from)
    secrets = tuple(secrets)
    err.message = redact(err.message, secrets)
    err.args = (err.message,)
    return err


@dataclass(frozen=True)
class Timeouts:
    """The client's deadlines in seconds (None: unknown), so a timeout names the one that ran out."""
    connect: float | None = None
    idle: float | None = None


def _timeout_phase(exc: BaseException | None) -> str:
    """`connect` for a timeout while connecting (or waiting for a pooled connection), else `idle`."""
    names = {cls.__name__ for cls in type(exc).__mro__} if exc is not None else set()
    return "connect" if names & {"ConnectTimeout", "PoolTimeout"} else "idle"


def _is_timeout(exc: BaseException) -> bool:
    """A timeout of the HTTP layer under the SDK (httpx2 today), raised while a stream is read."""
    return any(cls.__name__ == "TimeoutException" and cls.__module__.split(".")[0].startswith("httpx")
               for cls in type(exc).__mro__)


def _timeout_error(cause: BaseException | None, *, where: str, retries: int | None, timeouts: Timeouts,
                   started: bool) -> ModelError:
    """A deadline ran out: say which one, the setting that sets it, and what to check."""
    if _timeout_phase(cause) == "connect":
        within = f" within {timeouts.connect:g} s (CTXTUI_API_CONNECT_TIMEOUT)" if timeouts.connect else ""
        return ModelError("connection", f"Could not connect to {where}{within}.{_retried(retries)} Check your "
                                        "network and ANTHROPIC_BASE_URL.", True, already_retried=True)
    within = f"within {timeouts.idle:g} s (CTXTUI_API_IDLE_TIMEOUT)" if timeouts.idle else "in time"
    if started:   # the SDK never retries a stream that broke after it started: the loop may
        return ModelError("connection", f"{where[0].upper()}{where[1:]} went silent mid-answer (no data {within}); "
                                        "the partial answer was discarded. Check your network or ANTHROPIC_BASE_URL.",
                          True)
    return ModelError("connection", f"{where[0].upper()}{where[1:]} did not answer {within}.{_retried(retries)} "
                                    "Check your network or ANTHROPIC_BASE_URL (raise CTXTUI_API_IDLE_TIMEOUT for a "
                                    "slow proxy).", True, already_retried=True)


def sdk_classes(exc: BaseException) -> frozenset[str]:
    """The names of the SDK's exception classes `exc` is an instance of (empty: not the SDK's)."""
    return frozenset(cls.__name__ for cls in type(exc).__mro__
                     if cls.__module__.split(".")[0] == "anthropic")


def _classify(exc: BaseException, *, base_url: Any, retries: int | None, model: str | None,
              timeouts: Timeouts, model_from: str | None = None) -> ModelError:
    where = f"the API at {display_url(base_url)}" if base_url is not None else "the API"
    if isinstance(exc, ModelError):
        return exc
    sdk = sdk_classes(exc)
    if "APIStatusError" in sdk:
        return _status_error(exc, retries=retries, model=model, model_from=model_from)
    if "APITimeoutError" in sdk:
        return _timeout_error(exc.__cause__, where=where, retries=retries, timeouts=timeouts, started=False)
    if "APIConnectionError" in sdk:
        cause = exc.__cause__ or exc.__context__
        why = f": {type(cause).__name__}" if cause is not None else ""
        return ModelError("connection", f"Could not connect to {where}{why}.{_retried(retries)} Check your network "
                                        "connection and ANTHROPIC_BASE_URL.", True, already_retried=True)
    if "APIResponseValidationError" in sdk:
        status = getattr(exc, "status_code", None)
        return ModelError("server", f"The API sent a response ctxtui could not read (HTTP {status}). Try "
                                    "again.", True, None, status)
    if isinstance(exc, TruncatedStream):
        return ModelError("connection", f"The connection to {where} closed before the answer was complete; the "
                                        "partial answer was discarded. Try again.", True)
    if "AnthropicError" in sdk:
        return ModelError("auth" if type(exc).__name__.endswith("CredentialsError") else "server",
                          f"The Anthropic client failed: {type(exc).__name__}. Check ANTHROPIC_API_KEY and "
                          "ANTHROPIC_BASE_URL.", False)
    if _is_timeout(exc):
        return _timeout_error(exc, where=where, retries=retries, timeouts=timeouts, started=True)
    if _is_transport_error(exc):
        return ModelError("connection", f"The connection to {where} dropped mid-answer ({type(exc).__name__}); the "
                                        "partial answer was discarded. Try again.", True)
    if isinstance(exc, MALFORMED_STREAM_ERRORS):
        return ModelError("server", f"{where[0].upper()}{where[1:]} sent a malformed event "
                                    f"stream ({type(exc).__name__}); the partial answer was discarded. Try again.",
                          True)
    return ModelError("server", f"The model call failed unexpectedly ({type(exc).__name__}). Try again.", True)


def _mid_stream_cause(exc: BaseException) -> BaseException:
    """The HTTP layer's error under an SDK connection or timeout error raised mid-stream: newer
    SDKs (anthropic 2.x) wrap a broken stream the way they wrap a failed connect, and the
    message for a connect ("retried n times") would be false for a stream nobody retries."""
    if sdk_classes(exc) & {"APIConnectionError", "APITimeoutError"}:
        cause = exc.__cause__ or exc.__context__
        if cause is not None and (_is_timeout(cause) or _is_transport_error(cause)):
            return cause
    return exc


def _is_transport_error(exc: BaseException) -> bool:
    """An error of the HTTP layer under the SDK (httpx2 today), raised while a stream is read."""
    for cls in type(exc).__mro__:
        if cls.__name__ == "TransportError" and cls.__module__.split(".")[0].startswith("httpx"):
            return True
    return isinstance(exc, (ConnectionError, EOFError))
