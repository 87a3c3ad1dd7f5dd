"""The real model client: `anthropic.AsyncAnthropic`, streaming, the SDK's own retries.

The SDK parses the SSE stream and retries 429/5xx/529/connection failures and timeouts (honouring
`retry-after`); this module adds prompt-cache breakpoints, deadlines sized for streaming, a
`Waiting` event every few seconds until the answer starts, turns stream events into loop events,
and classifies failures into `ModelError` (agent_core/providers/errors.py).

Deadlines: `connect` bounds TCP+TLS set-up; `idle` bounds the silence between two chunks of the
answer (and the wait for its first byte). The API streams a `ping` event every few seconds while it
works, so a healthy stream is never silent for long; 120 s leaves room for a slow proxy or a long
prefill of a full window. A server that never answers is given up on after (retries + 1) x idle,
about six minutes with the defaults (the SDK's own default waits ten minutes per attempt).

The SDK is imported in one place, `load_sdk`, when the client is first used (its first request,
off the event loop in a worker thread), not when this module is imported or the client is built:
it takes a second or more to import, more than everything else ctxtui loads before its first
figure. So a run prints its first event, and the TUI paints its first screen, before the SDK has
loaded, and the demo model never loads it (tests/app/cli/test_headless_startup.py).
"""
from __future__ import annotations

import asyncio
import contextvars
import math
import time
import warnings
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, AsyncIterator, Coroutine, TypeGuard

from agent_core.providers.errors import TruncatedStream, classify
from agent_core.events import CompactionDelta, CompactionEnded, CompactionStarted, TextDelta, ThinkingDelta, Waiting
from agent_core.providers.model import ModelError, ModelInfo, ModelResponse, StreamItem
from agent_core.providers.models_info import (DEFAULT_MODEL, LONG_CONTEXT_BETA, model_limits,
                                              sends_long_context_beta)
from agent_core.providers.cache_breakpoints import cache_control, with_cache_breakpoints
from agent_core.providers.server_context import COMPACT_BETA, COMPACTION_BLOCK, ServerPlan, is_beta_rejection

DEFAULT_MAX_RETRIES = 2
DEFAULT_CONNECT_TIMEOUT = 10.0        # same defaults as agent_core/config.py
DEFAULT_IDLE_TIMEOUT = 120.0
WAITING_EVERY = 10.0                  # seconds between Waiting events (at most a quarter of the idle timeout)


def load_sdk() -> ModuleType:
    """The `anthropic` SDK, imported on first use: the only import of it in ctxtui (import-linter
    holds the rest of agent_core and app to that). Safe from any thread; after the first call it
    is a dictionary look-up."""
    import anthropic  # noqa: PLC0415  (start-up time: the module docstring says why)
    return anthropic


def quiet_sdk_serializer() -> None:
    """The SDK builds the answer from the stream without validating it and serializes part of it
    itself (`to_dict` of message_start's message): a count the server sent as NaN, infinity or a
    string makes pydantic print "Pydantic serializer warnings" on stderr, over the TUI or into a
    script's output. Our own reading never serializes (`plain`, `_count`); this filter silences
    the SDK's, and only that warning. Installed by each client (a filter added at import time
    would be lost when the import runs inside `warnings.catch_warnings`); adding it again
    replaces the same filter, so it is never stacked."""
    warnings.filterwarnings("ignore", message="Pydantic serializer warnings", category=UserWarning,
                            module=r"pydantic\.main")


# ---------------------------------------------------------------- response conversion

def holds_compaction(messages: list[dict]) -> bool:
    """A history that holds a server compaction block (a session the server engine compacted)."""
    for m in messages:
        content = m.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == COMPACTION_BLOCK
                                             for b in content):
            return True
    return False


def block_to_dict(block: Any) -> dict:
    """A content block in the plain form the API accepts back in the next request. A compaction
    block keeps exactly the fields the API sent, nulls included (a null summary is a failed
    compaction the API wants back as it was)."""
    if getattr(block, "type", None) == COMPACTION_BLOCK and hasattr(block, "model_dump"):
        return block.model_dump(mode="json", exclude_unset=True)
    d = block.model_dump(mode="json", exclude_none=True) if hasattr(block, "model_dump") else dict(block)
    d.pop("parsed_output", None)
    t = d.get("type")
    if t == "text":
        out = {"type": "text", "text": d.get("text", "")}
        if d.get("citations"):
            out["citations"] = d["citations"]
        return out
    if t == "thinking":
        return {"type": "thinking", "thinking": d.get("thinking", ""), "signature": d.get("signature", "")}
    if t == "redacted_thinking":
        return {"type": "redacted_thinking", "data": d.get("data", "")}
    if t == "tool_use":
        return {"type": "tool_use", "id": d["id"], "name": d["name"], "input": d.get("input") or {}}
    return d


def _count(v: Any) -> int:
    """A token count as the API should send it: a whole number >= 0. Anything else (a string,
    NaN, infinity, a negative or a bool: a broken proxy or server) counts 0 rather than stopping
    the turn; the answer itself is kept."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return 0
    if isinstance(v, float) and not math.isfinite(v):
        return 0
    return max(0, int(v))


# A usage count no real request comes near: 100 times the largest window (1M tokens). A larger one,
# a negative one or NaN says the server or a proxy is broken, not how large the context is.
MAX_BELIEVABLE_TOKENS = 100_000_000
NOT_BELIEVABLE = "not_believable"     # the usage key that says so (the loop then estimates the context)


def _unbelievable(v: object) -> TypeGuard[int | float]:
    """A number no real usage has (a string or a bool is no number: it counts 0, said nowhere)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return not 0 <= v <= MAX_BELIEVABLE_TOKENS          # NaN fails both comparisons


def _figure(v: int | float) -> str:
    """As said to the user: digits grouped ("1,000,000"), or "nan"; an int too long to print
    (Python refuses over 4,300 digits) by its size only."""
    return f"{v:,}" if isinstance(v, float) or abs(v) < 10**60 else "over 10^60"


def usage_to_dict(usage: Any) -> dict:
    """Usage with every cache field present; the cache-write split defaults to all 5-minute writes
    (the TTL our breakpoints ask for) when the API does not report it. A field of the wrong type
    counts 0 (`_count`). A count that is not believable (`_unbelievable`) makes the whole usage
    so: every count 0 and NOT_BELIEVABLE set to what to tell the user, so that neither the cost,
    nor the context figure, nor the compaction thresholds ever see it. This is where the server's
    usage is read: nothing downstream has to judge it again."""
    get = (lambda k: usage.get(k)) if isinstance(usage, dict) else (lambda k: getattr(usage, k, None))
    raw = {k: get(k) for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                               "cache_read_input_tokens")}
    out: dict[str, Any] = {k: _count(v) for k, v in raw.items()}
    cc = get("cache_creation")
    if cc is not None:
        cget = (lambda k: cc.get(k)) if isinstance(cc, dict) else (lambda k: getattr(cc, k, None))
        raw.update({k: cget(k) for k in ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")})
        split = {"ephemeral_5m_input_tokens": _count(cget("ephemeral_5m_input_tokens")),
                 "ephemeral_1h_input_tokens": _count(cget("ephemeral_1h_input_tokens"))}
    else:
        split = {"ephemeral_5m_input_tokens": out["cache_creation_input_tokens"], "ephemeral_1h_input_tokens": 0}
    out["cache_creation"] = split
    odd = [(k, v) for k, v in raw.items() if _unbelievable(v)]
    if odd:
        key, value = odd[0]
        out = {**dict.fromkeys(out, 0), "cache_creation": dict.fromkeys(split, 0)}
        out[NOT_BELIEVABLE] = (f"usage not believable: {_figure(value)} tokens ({key}"
                               f"{f' and {len(odd) - 1} more' if len(odd) > 1 else ''} in the API's answer). "
                               "The answer is kept; its usage is left out of the cost, and the context "
                               "figure is estimated instead.")
    for extra in ("service_tier",):
        if isinstance(v := get(extra), str):
            out[extra] = v
    return out


# ---------------------------------------------------------------- deadlines and the wait notice

def stream_timeout(sdk: ModuleType, connect: float, idle: float) -> Any:
    """Per-operation deadlines (an `sdk.Timeout`): connect (and waiting for a pooled connection),
    and idle for each read of the answer and each write of the request, never a total: a long
    answer that keeps streaming is never cut."""
    return sdk.Timeout(connect=connect, read=idle, write=idle, pool=connect)


@dataclass
class _Progress:
    """One call's wait for its answer: which SDK attempt is running, and since when."""
    of: int
    attempt: int = 1
    started: float = field(default_factory=time.monotonic)

    def event(self) -> Waiting:
        elapsed = time.monotonic() - self.started
        return Waiting(f"Waiting for the API: {elapsed:.0f} s, attempt {self.attempt}/{self.of}",
                       elapsed_s=round(elapsed, 2), attempt=self.attempt, of=self.of)


_CALL: contextvars.ContextVar[_Progress | None] = contextvars.ContextVar("ctxtui_api_call", default=None)


async def _track_attempt(request: Any, call_next: Any) -> Any:
    """SDK middleware, run once per HTTP attempt: tells the waiting call which attempt this is."""
    progress = _CALL.get()
    if progress is not None:
        progress.attempt = request.retries_taken + 1
    return await call_next(request)


def _start(progress: _Progress, coro: Coroutine[Any, Any, Any]) -> asyncio.Task:
    """`coro` as a task whose SDK attempts report to `progress` (through `_CALL`)."""
    ctx = contextvars.copy_context()
    ctx.run(_CALL.set, progress)
    return asyncio.get_running_loop().create_task(coro, context=ctx)


async def _heartbeat(task: asyncio.Task, progress: _Progress, every: float) -> AsyncIterator[Waiting]:
    """A `Waiting` every `every` seconds until `task` is done (its result is the caller's)."""
    while not task.done():
        done, _ = await asyncio.wait({task}, timeout=every)
        if not done:
            yield progress.event()


async def _next(s: Any) -> Any:
    try:
        return await s.__anext__()
    except StopAsyncIteration:
        return None


async def _open(manager: Any) -> tuple[Any, Any]:
    """Send the request and wait for the first event: the part of a call the wait notice covers."""
    s = await manager.__aenter__()
    return s, await _next(s)


async def _close(opening: asyncio.Task, manager: Any) -> None:
    """Stop a request still opening and close the response, whatever ended the call."""
    if not opening.done():
        opening.cancel()
        await asyncio.wait({opening})
    elif not opening.cancelled():
        opening.exception()              # retrieved: no "exception was never retrieved" at exit
    await manager.__aexit__(None, None, None)


def _delta(event: Any) -> TextDelta | ThinkingDelta | CompactionDelta | None:
    if event.type == "text" and event.text:
        return TextDelta(text=event.text)
    if event.type == "thinking" and event.thinking:
        return ThinkingDelta(text=event.thinking)
    if event.type == "compaction" and getattr(event, "content", None):
        return CompactionDelta(text=event.content)
    return None


def _compaction_progress(event: Any, started: list[float]) -> CompactionStarted | CompactionEnded | None:
    """A server compaction block opening or closing in the stream, as the live compaction events
    the front-ends already show for ours (`started` holds when it opened). The loop fills in the
    size of what is being summarized."""
    block = getattr(event, "content_block", None)
    if getattr(block, "type", None) != COMPACTION_BLOCK:
        return None
    if event.type == "content_block_start":
        started[:] = [time.time()]
        return CompactionStarted(purpose="server", tokens_before=0, started=started[0])
    if event.type == "content_block_stop":
        summary = getattr(block, "content", None) or ""
        return CompactionEnded(ok=bool(summary), duration_s=round(time.time() - (started or [time.time()])[0], 3),
                               chars=len(summary), message="" if summary else
                               "The API's compaction returned no summary: nothing was compacted.")
    return None


MAX_DEPTH = 32


def plain(value: Any, depth: int = 0) -> Any:
    """A response field as plain data, read off the SDK's objects without pydantic's serializer.

    The SDK builds a response from the stream without validating it, so a field can hold anything
    the server sent: a string where an object belongs, NaN where a count does. `model_dump` then
    fails (`'str' object has no attribute 'model_dump'`) or prints serializer warnings on stderr;
    this walk does neither. Models become dicts of their fields (extras included), containers
    stay containers, numbers and strings stay as they came (the reader judges them), anything
    else, or anything nested deeper than MAX_DEPTH, becomes None."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth >= MAX_DEPTH:
        return None
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    if _is_model(value):
        fields = {**vars(value), **(value.__pydantic_extra__ or {})}
        return {str(k): plain(v, depth + 1) for k, v in fields.items() if not str(k).startswith("_")}
    return None


def _is_model(value: Any) -> bool:
    """A pydantic model (what the SDK's response objects are), told by its class hierarchy so that
    this module does not import pydantic before the SDK does."""
    return any(cls.__name__ == "BaseModel" and cls.__module__ == "pydantic.main" for cls in type(value).__mro__)


def server_details(message: Any) -> dict | None:
    """What the server did to the context for this answer: `context_management` (the edits it
    applied) and `iterations` (the usage of each step, the compaction's own included), as plain
    data and as the server sent them: `server_context.read_outcome` judges their types."""
    cm = getattr(message, "context_management", None)
    iterations = getattr(getattr(message, "usage", None), "iterations", None)
    if cm is None and not iterations:
        return None
    if isinstance(iterations, (list, tuple)):
        iterations = [{k: v for k, v in it.items() if v is not None} if isinstance(it, dict) else it
                      for it in plain(iterations)]
    else:
        iterations = plain(iterations)
    return {"context_management": plain(cm), "iterations": iterations if iterations is not None else []}


# ---------------------------------------------------------------- the client

class AnthropicClient:
    """`ModelClient` over the Anthropic Messages API."""

    def __init__(self, api_key: str, base_url: str | None = None, model: str = DEFAULT_MODEL,
                 max_output_tokens: int | None = None, context_window: int | None = None,
                 max_retries: int = DEFAULT_MAX_RETRIES, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 idle_timeout: float = DEFAULT_IDLE_TIMEOUT, cache_ttl: str = "5m",
                 server: ServerPlan | None = None, long_context: bool = False,
                 model_from: str | None = None) -> None:
        quiet_sdk_serializer()
        if not api_key:
            raise ModelError("auth", "No API key: set ANTHROPIC_API_KEY, or run with --model demo to stay offline.")
        kwargs: dict[str, Any] = {"api_key": api_key, "max_retries": max_retries, "middleware": [_track_attempt]}
        if base_url:
            kwargs["base_url"] = base_url          # else the SDK reads ANTHROPIC_BASE_URL itself
        self._sdk_options = kwargs
        self._sdk_client: Any = None               # the SDK's AsyncAnthropic, built on first use
        self._secrets = (api_key,)
        self.max_retries = max_retries
        self.connect_timeout, self.idle_timeout = connect_timeout, idle_timeout
        self.waiting_every = min(WAITING_EVERY, idle_timeout / 4)   # seconds between Waiting events
        cache_control(cache_ttl)                   # refuse a TTL the API would reject, here and clearly
        self.cache_ttl = cache_ttl
        self.model_from = model_from               # what set the model, when not a flag (/model): errors name it
        self.server = server                       # the server / hybrid engine's edits; None: local engine
        self.last_count_error: ModelError | None = None
        limits = model_limits(model, context_window=context_window, max_output_tokens=max_output_tokens,
                              long_context=long_context)
        # The 1M context where it is opt-in goes with the API's 1M beta (models_info's window rule).
        self.long_context_beta = sends_long_context_beta(model, long_context)
        self.info = ModelInfo(
            provider="anthropic", model=model, context_window=limits.context_window,
            max_output_tokens=limits.max_output_tokens, offline=False,
            notes=[f"context window {limits.context_window:,} ({limits.window_source})",
                   f"max output {limits.max_output_tokens:,} ({limits.output_source})"])

    def __repr__(self) -> str:  # never show the key
        return f"AnthropicClient(model={self.info.model!r}, base_url={str(self.base_url)!r})"

    @property
    def base_url(self) -> Any:
        """The SDK client's base URL once it is built; before, the one configured (None: the SDK
        will read ANTHROPIC_BASE_URL or use its default)."""
        if self._sdk_client is not None:
            return self._sdk_client.base_url
        return self._sdk_options.get("base_url")

    @property
    def _client(self) -> Any:
        """The SDK's `AsyncAnthropic`, built (and the SDK imported, in the calling thread) the
        first time it is asked for. The loop's calls go through `_ready`, which imports off the
        event loop."""
        if self._sdk_client is None:
            sdk = load_sdk()
            self._sdk_client = sdk.AsyncAnthropic(
                **self._sdk_options, timeout=stream_timeout(sdk, self.connect_timeout, self.idle_timeout))
        return self._sdk_client

    async def _ready(self) -> Any:
        """`_client`, the SDK imported in a worker thread the first time so that the event loop
        (the TUI's screen, a signal's cancellation) goes on meanwhile."""
        if self._sdk_client is None:
            await asyncio.to_thread(load_sdk)
        return self._client

    def _error(self, exc: BaseException, *, started: bool = False) -> ModelError:
        err = classify(exc, secrets=self._secrets, base_url=self.base_url, retries=self.max_retries,
                       model=self.info.model, connect_timeout=self.connect_timeout, idle_timeout=self.idle_timeout,
                       started=started, model_from=self.model_from)
        if self.server is not None and is_beta_rejection(err.status, err.message):
            return ModelError("bad_request", f"The API refused server-side context management (CTXTUI_ENGINE="
                                             f"{self.server.engine}, betas {', '.join(self.server.betas())}): "
                                             f"{err.message} Set CTXTUI_ENGINE=local (or --engine local) to let "
                                             f"ctxtui compact on its own.", status=err.status)
        return err

    def request_params(self, *, system: str | list[dict] | None, messages: list[dict], tools: list[dict],
                       max_tokens: int, purpose: str = "main") -> dict[str, Any]:
        """The keyword arguments for `messages.stream` (public so tests and the log can see them)."""
        sys_blocks, msgs, tls = with_cache_breakpoints(system, messages, tools, self.cache_ttl)
        params: dict[str, Any] = {"model": self.info.model, "max_tokens": int(max_tokens), "messages": msgs}
        if sys_blocks:
            params["system"] = sys_blocks
        if tls:
            # Every purpose sends the same tools and no tool_choice: a summary call shares the main
            # call's prefix, so it reads the conversation from the prompt cache (a tool_choice of its
            # own would invalidate the cached messages). A summary that calls a tool is refused by
            # the caller instead.
            params["tools"] = tls
        if self.server is not None:
            # The betas always: a history holding a compaction block needs the compaction beta.
            params["betas"] = self.server.betas()
            cm = self.server.context_management(purpose)
            if cm is not None:
                params["context_management"] = cm
        elif holds_compaction(messages):
            # A session the server engine compacted, resumed with the local engine: the API reads
            # the block (and only it) with the compaction beta, and no edit asks for more.
            params["betas"] = [COMPACT_BETA]
        self._long_context(params)
        return params

    def _long_context(self, params: dict[str, Any]) -> None:
        """Add the 1M beta to a request (or a count) when the session is on the 1M context."""
        if self.long_context_beta:
            params["betas"] = [*params.get("betas", ()), LONG_CONTEXT_BETA]

    async def stream(self, *, system: str, messages: list[dict], tools: list[dict], max_tokens: int,
                     purpose: str = "main") -> AsyncIterator[StreamItem]:
        """`Waiting` every few seconds until the answer starts, then text and thinking deltas as
        they arrive, then one `ModelResponse`. Raises `ModelError`. A stream that stops before
        `message_stop` (cut connection), goes silent past the idle timeout or cannot be parsed
        raises a retryable `ModelError`; its partial text was already yielded, so the caller decides."""
        params = self.request_params(system=system, messages=messages, tools=tools, max_tokens=max_tokens,
                                     purpose=purpose)
        progress = _Progress(of=self.max_retries + 1)
        try:
            client = await self._ready()
        except Exception as e:
            raise self._error(e) from e
        messages_api = client.beta.messages if "betas" in params else client.messages
        manager = messages_api.stream(**params)
        compaction_started: list[float] = []
        opening = _start(progress, _open(manager))
        started = False
        try:
            async for waiting in _heartbeat(opening, progress, self.waiting_every):
                yield waiting
            s, event = opening.result()
            started = True
            finished = False
            while event is not None:
                finished = finished or event.type == "message_stop"
                delta = _delta(event) or _compaction_progress(event, compaction_started)
                if delta is not None:
                    yield delta
                event = await _next(s)
            if not finished:
                raise TruncatedStream()
            message = await s.get_final_message()
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except ModelError as e:
            raise self._error(e) from None
        except Exception as e:
            raise self._error(e, started=started) from e
        finally:
            await _close(opening, manager)
        yield ModelResponse(id=message.id, model=message.model,
                            content=[block_to_dict(b) for b in message.content],
                            usage=usage_to_dict(message.usage), stop_reason=message.stop_reason,
                            server=server_details(message))

    async def count_tokens(self, *, system: str, messages: list[dict], tools: list[dict]) -> int | None:
        """The API's exact input count, or None when the call fails (the reason is kept in
        `last_count_error`); counting is a confirmation, never a reason to stop a session."""
        params: dict[str, Any] = {"model": self.info.model, "messages": list(messages)}
        if isinstance(system, str) and system.strip():
            params["system"] = system
        elif isinstance(system, list) and system:
            params["system"] = system
        if tools:
            params["tools"] = list(tools)
        try:
            # one try: a count only sharpens a figure, and against a silent server the SDK's
            # retries would hold the first turn three idle timeouts before its own request
            client = (await self._ready()).with_options(max_retries=0)
        except Exception as e:
            self.last_count_error = self._error(e)
            return None
        counter = client.messages
        if self.server is not None:   # a history holding a compaction block is counted as the server sees it
            params["betas"] = self.server.betas()
            params["context_management"] = self.server.context_management()
            counter = client.beta.messages
        elif holds_compaction(params["messages"]):
            params["betas"] = [COMPACT_BETA]
            counter = client.beta.messages
        self._long_context(params)
        if "betas" in params:
            counter = client.beta.messages
        try:
            result = await counter.count_tokens(**params)
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except Exception as e:
            self.last_count_error = self._error(e)
            return None
        self.last_count_error = None
        return int(result.input_tokens)

    async def aclose(self) -> None:
        if self._sdk_client is not None:           # never used: nothing to close, and no SDK to load
            await self._sdk_client.close()
