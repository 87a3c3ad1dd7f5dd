"""A loopback HTTP server speaking the Anthropic Messages API, for tests that drive the real SDK.

It runs `http.server` in a background thread (so it serves an asyncio test's client, or a
subprocess, alike), binds 127.0.0.1 only, answers POST /v1/messages (SSE when `stream: true`)
and POST /v1/messages/count_tokens, validates each request like the API, and records every
request. Answers come from a script (see script.py) and then from an optional responder.
"""
from __future__ import annotations

import copy
import json
import os
import socket
import sys
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

from tests.fake_anthropic import context_management as cm
from tests.fake_anthropic import sse
from tests.fake_anthropic.script import FAULTS, STATUS_FAULTS, Item, as_item, reply
from tests.fake_anthropic.usage import PrefixCache, Tokenizer, count_input, count_output
from tests.fake_anthropic.validation import RequestError, validate_request

SECRET_HEADERS = {"x-api-key", "authorization"}


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]          # secret headers replaced by "<redacted>"
    body: Any                        # parsed JSON (None when the body was not JSON)
    status: int | None = None        # HTTP status answered
    served: str | None = None        # "reply" | a fault kind | "count_tokens" | "invalid" | "prompt_too_long"
    #                                  | "max_tokens_over_window" (input + max_tokens over the window)
    response_id: str | None = None
    error: str | None = None         # the error message answered, if any
    usage: dict | None = None        # usage reported for a reply
    compaction: dict | None = None   # the compaction block the reply opened with (server compaction)

    def to_dict(self) -> dict:
        return {"method": self.method, "path": self.path, "headers": self.headers, "body": self.body,
                "status": self.status, "served": self.served, "response_id": self.response_id,
                "error": self.error, "usage": self.usage}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients dropping keep-alive connections (or a cut we caused) are normal here; stay quiet."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


@dataclass
class _Counters:
    request: int = 0
    message: int = 0
    tool: int = 0


class FakeAnthropic:
    """The fake API. Use as a context manager or `start()`/`stop()`; `base_url` is what to give
    `AsyncAnthropic(base_url=...)` or ANTHROPIC_BASE_URL."""

    def __init__(self, script: Iterable[Item | str] = (), *, responder: Callable[[dict], Any] | None = None,
                 context_window: int | None = None, max_output: int | None = None, api_key: str | None = None,
                 models: Iterable[str] | None = None, min_cache_tokens: int = 0,
                 require_tools_for_tool_blocks: bool = True, default_chunk: int = 16,
                 record_path: str | None = None, host: str = "127.0.0.1", port: int = 0,
                 reject_betas: Iterable[str] = (), tokenizer: Tokenizer | None = None) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("fake_anthropic binds loopback only")
        self._queue: deque[Item] = deque(as_item(x) for x in script)
        self.responder = responder
        self.context_window = context_window
        self.max_output = max_output
        self.api_key = api_key
        self.models = set(models) if models is not None else None
        self.require_tools_for_tool_blocks = require_tools_for_tool_blocks
        self.default_chunk = default_chunk
        # how the server counts tokens (usage, count_tokens, the window): None is ctxtui's own estimator
        self.tokenizer = tokenizer
        self.cache = PrefixCache(min_cache_tokens, tokenizer)
        self.count_delay = 0.0        # seconds count_tokens takes to answer
        self.count_bias = 0           # added to count_tokens answers: a server that counts unlike the estimator
        self.record_path = record_path
        self.reject_betas = set(reject_betas)   # betas answered 400 (an API that does not offer them)
        self._host, self._port = host, port
        self._lock = threading.Lock()
        self._records: list[RecordedRequest] = []
        self._n = _Counters()
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> "FakeAnthropic":
        self._stopping.clear()
        httpd = _Server((self._host, self._port), _Handler)
        httpd.fake = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-anthropic", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> "FakeAnthropic":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the fake server is not running"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------ script and records

    def push(self, *items: Item | str) -> "FakeAnthropic":
        with self._lock:
            self._queue.extend(as_item(x) for x in items)
        return self

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._records)

    @property
    def message_requests(self) -> list[dict]:
        """Bodies of every POST /v1/messages received (retries included)."""
        return [r.body for r in self.requests if r.path == "/v1/messages"]

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._records.clear()
        self.cache.clear()

    # ------------------------------------------------------------ internals used by the handler

    def _next_item(self, body: dict) -> Item | None:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is None:
            return None
        out = self.responder(body)
        return as_item(out) if out is not None else None

    def _record(self, rec: RecordedRequest) -> str:
        """Keep the request; returns its request id."""
        with self._lock:
            self._n.request += 1
            self._records.append(rec)
            return f"req_fake_{self._n.request:06d}"

    def _finish(self, rec: RecordedRequest) -> None:
        if not self.record_path:
            return
        line = json.dumps(rec.to_dict(), ensure_ascii=False) + "\n"
        with self._lock:
            fd = os.open(self.record_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(line)

    def _ids(self, content: list[dict]) -> tuple[str, list[dict]]:
        with self._lock:
            self._n.message += 1
            mid = f"msg_fake_{self._n.message:04d}"
            out = []
            for b in content:
                b = copy.deepcopy(b)
                if b.get("type") == "tool_use" and not b.get("id"):
                    self._n.tool += 1
                    b["id"] = f"toolu_fake_{self._n.tool:04d}"
                out.append(b)
        return mid, out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-anthropic/1"

    @property
    def fake(self) -> FakeAnthropic:
        return self.server.fake  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        with self.fake._lock:
            self.fake._conns.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.fake._lock:
                self.fake._conns.discard(self.connection)

    # ------------------------------------------------------------ responses

    def _json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", self.rid)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _error(self, rec: RecordedRequest, status: int, etype: str, message: str, *, served: str,
               headers: dict[str, str] | None = None) -> None:
        rec.status, rec.served, rec.error = status, served, message
        self._json(status, {"type": "error", "error": {"type": etype, "message": message},
                            "request_id": self.rid}, headers)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _cut(self) -> None:
        """Drop the connection mid-body: no terminating chunk, so the client sees a truncated read."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ------------------------------------------------------------ routing

    def do_GET(self) -> None:  # noqa: N802
        self.rid = "req_fake_get"
        self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "Not Found"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): ("<redacted>" if k.lower() in SECRET_HEADERS else v) for k, v in self.headers.items()}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        rec = RecordedRequest("POST", path, headers, body)
        fake = self.fake
        self.rid = fake._record(rec)
        try:
            self._route(rec, raw, path)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            fake._finish(rec)

    def _route(self, rec: RecordedRequest, raw: bytes, path: str) -> None:
        fake = self.fake
        key = self.headers.get("x-api-key")
        auth = self.headers.get("authorization", "")
        if not key and auth.lower().startswith("bearer "):
            key = auth[7:]
        if not key:
            return self._error(rec, 401, "authentication_error", "x-api-key header is required", served="auth")
        if fake.api_key is not None and key != fake.api_key:
            return self._error(rec, 401, "authentication_error", "invalid x-api-key", served="auth")
        if path not in ("/v1/messages", "/v1/messages/count_tokens"):
            return self._error(rec, 404, "not_found_error", f"Not Found: {path}", served="invalid")
        if rec.body is None:
            return self._error(rec, 400, "invalid_request_error",
                               "There was an error parsing the body of your request as JSON", served="invalid")
        count_only = path.endswith("/count_tokens")
        try:
            validate_request(rec.body, count_only=count_only, max_output=fake.max_output, models=fake.models,
                             require_tools_for_tool_blocks=fake.require_tools_for_tool_blocks)
            betas = {b.strip() for b in (self.headers.get("anthropic-beta") or "").split(",") if b.strip()}
            cm.check(rec.body, betas, fake.reject_betas)
        except RequestError as e:
            return self._error(rec, e.status, e.type, e.message, served="invalid")
        body: dict = rec.body
        if count_only:
            if fake.count_delay and fake._stopping.wait(fake.count_delay):
                return self._cut()
            rec.status, rec.served = 200, "count_tokens"
            view = cm.manage({k: v for k, v in body.items() if k != "context_management"}).view
            return self._json(200, {"input_tokens": count_input(view, fake.tokenizer) + fake.count_bias})
        managed = cm.manage(body)       # what the model is shown once the server's edits are applied
        total, shown = managed.size, count_input(managed.view, fake.tokenizer)
        if fake.tokenizer is not None and "context_management" not in body:
            total = shown   # (the server's edits count with ctxtui's estimator in any case)
        if fake.context_window is not None and total > fake.context_window:
            return self._error(rec, 400, "invalid_request_error",
                               f"prompt is too long: {total} tokens > {fake.context_window} maximum",
                               served="prompt_too_long")
        asked = body.get("max_tokens")
        if fake.context_window is not None and isinstance(asked, int) and shown + asked > fake.context_window:
            return self._error(rec, 400, "invalid_request_error",
                               f"input length and `max_tokens` exceed context limit: {shown} + {asked} > "
                               f"{fake.context_window}, decrease input length or `max_tokens` and try again",
                               served="max_tokens_over_window")
        item = fake._next_item(body)
        if item is None:
            return self._error(rec, 400, "invalid_request_error",
                               f"fake_anthropic: the script is empty and no responder is set "
                               f"(request {rec.path} #{len(fake.message_requests)})", served="exhausted")
        kind = item.get("fault")
        if kind is not None:
            if kind not in FAULTS:
                return self._error(rec, 500, "api_error", f"fake_anthropic: unknown fault {kind!r}", served="invalid")
            if kind in STATUS_FAULTS:
                return self._status_fault(rec, item, total)
        self._answer(rec, body, item)

    def _managed_usage(self, managed: cm.Managed, content: list[dict]) -> tuple[dict, list[dict] | None]:
        """The answer's usage as the model saw the request (the server's edits applied) and, when it
        compacted, the per-step iterations (the compaction's own usage is not in the top level)."""
        def priced(view: dict, out: list[dict]) -> dict:
            cu = self.fake.cache.account(view)
            return {"input_tokens": cu.input_tokens, "cache_creation_input_tokens": cu.cache_creation_input_tokens,
                    "cache_read_input_tokens": cu.cache_read_input_tokens,
                    "cache_creation": {"ephemeral_5m_input_tokens": cu.ephemeral_5m_input_tokens,
                                       "ephemeral_1h_input_tokens": cu.ephemeral_1h_input_tokens},
                    "output_tokens": count_output(out, self.fake.tokenizer) if out else 0}
        if managed.compaction is None:
            return priced(managed.view, content), None
        summary = managed.compaction.get("content") or ""
        step = {"type": "compaction", "input_tokens": managed.size, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0, "output_tokens": count_output([{"type": "text", "text": summary}])}
        if managed.pause:
            zero = {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                    "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                    "output_tokens": 0}
            return zero, [step]
        usage = priced(managed.view, content)
        message = {"type": "message", **{k: usage[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                                               "cache_read_input_tokens", "output_tokens")}}
        return usage, [step, message]

    def _status_fault(self, rec: RecordedRequest, item: Item, total: int) -> None:
        kind = item["fault"]
        ra = item.get("retry_after", 0.01)
        if kind == "rate_limit":
            return self._error(rec, 429, "rate_limit_error", item.get("message", "Number of request tokens has "
                               "exceeded your per-minute rate limit"), served=kind, headers={"retry-after": f"{ra}"})
        if kind == "overloaded":
            return self._error(rec, 529, "overloaded_error", item.get("message", "Overloaded"), served=kind,
                               headers={"retry-after": f"{ra}"})
        if kind == "server_error":  # a real 500 has no retry-after; give one to keep SDK backoff short in tests
            return self._error(rec, 500, "api_error", item.get("message", "Internal server error"), served=kind,
                               headers={"retry-after": f"{item['retry_after']}"} if "retry_after" in item else None)
        if kind == "auth":
            return self._error(rec, 401, "authentication_error", item.get("message", "invalid x-api-key"),
                               served=kind)
        if kind == "prompt_too_long":
            tokens = int(item.get("tokens", total))
            maximum = int(item.get("maximum", self.fake.context_window or max(1, tokens - 1)))
            return self._error(rec, 400, "invalid_request_error",
                               f"prompt is too long: {tokens} tokens > {maximum} maximum", served=kind)
        return self._error(rec, 400, "invalid_request_error", item.get("message", "bad request"), served=kind)

    def _answer(self, rec: RecordedRequest, body: dict, item: Item) -> None:
        fake = self.fake
        kind = item.get("fault")
        answer = item.get("reply") if kind else item
        if answer is None:
            answer = reply("This answer will not arrive in full: " + "lorem ipsum " * 8)
        content = answer.get("content") or []
        mid, content = fake._ids(content)
        mid = answer.get("id") or mid
        managed = cm.manage(body, fail_compaction=bool(item.get("compaction_fails")))
        if managed.compaction is not None:
            content = [managed.compaction] if managed.pause else [managed.compaction, *content]
        usage, iterations = self._managed_usage(managed, [b for b in content if b.get("type") != "compaction"])
        usage.update(answer.get("usage") or {})
        if iterations is not None:
            usage["iterations"] = iterations
        edits = {"applied_edits": managed.applied_edits} if "context_management" in body else None
        if "context_management" in answer:      # a scripted report, sent as it is (a hostile server)
            edits = answer["context_management"]
        rec.compaction = managed.compaction
        paused = managed.compaction is not None and managed.pause
        stop_reason = "compaction" if paused else answer.get("stop_reason") or (
            "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn")
        model = body["model"]
        rec.response_id, rec.usage = mid, usage
        if not body.get("stream"):
            return self._answer_json(rec, kind, sse.message_body(msg_id=mid, model=model, content=content,
                                                                usage=usage, stop_reason=stop_reason,
                                                                context_management=edits))
        events = sse.message_events(msg_id=mid, model=model, content=content, usage=usage, stop_reason=stop_reason,
                                    chunk=int(answer.get("chunk") or fake.default_chunk), context_management=edits)
        delay = float(answer.get("delay") or 0)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", self.rid)
        self.end_headers()
        rec.status, rec.served = 200, kind or "reply"
        limit = int(item.get("after_events", 3)) if kind else len(events)
        for i, (name, data) in enumerate(events):
            if i >= limit:
                break
            if delay and i and fake._stopping.wait(delay):
                return self._cut()
            self._chunk(sse.encode(name, data))
        if kind == "cut":
            return self._cut()
        if kind == "malformed":
            self._chunk(b"event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, "
                        b"\"delta\": {\"type\": \"text_delta\", \"text\": \"trunc\n\n")
        elif kind == "stream_error":
            etype = item.get("error_type", "overloaded_error")
            self._chunk(sse.encode("error", {"type": "error", "error": {
                "type": etype, "message": item.get("message", "Overloaded")}}))
        self._chunk(b"")  # the terminating zero-length chunk

    def _answer_json(self, rec: RecordedRequest, kind: str | None, payload: dict) -> None:
        data = json.dumps(payload).encode()
        rec.status, rec.served = 200, kind or "reply"
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("request-id", self.rid)
        self.send_header("content-length", str(len(data) if kind != "cut" else len(data) + 100))
        self.end_headers()
        if kind == "cut":
            self.wfile.write(data[: len(data) // 2])
            return self._cut()
        self.wfile.write(data[:-1] if kind == "malformed" else data)
        self.wfile.flush()
