"""The ACP agent: initialize, session/new, session/load, session/prompt, session/cancel.

Each request runs in a task of its own (the SDK's connection), so a cancel arrives while a prompt
runs. A prompt drives one `Agent.run` turn (or `/compact [focus]`) and sends each event as it
comes; a permission ask goes to the client in a task of its own, so the stream keeps flowing and a
cancel can end the wait. Bad input is a JSON-RPC error, never a crash: an unknown session, a
setting that cannot be used, a second prompt while one runs. What an error says goes through the
secret scrubber first.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.helpers import update_available_commands
from acp.schema import (AgentCapabilities, AvailableCommand, AvailableCommandInput, Implementation,
                        InitializeResponse, LoadSessionResponse, McpCapabilities, NewSessionResponse,
                        PromptCapabilities, PromptResponse, StopReason, UnstructuredCommandInput)

from compaction.scrub import scrub

from agent_core import events as ev
from agent_core.config import ConfigError
from agent_core.sessions.paths import is_session_id
from agent_core.sessions.session_log import SessionWriteError
from agent_core.sessions.session_reader import load_session as read_log
from agent_core.security.visible_text import one_line
from agent_core.version import __version__
from app.acp import permissions
from app.acp.history import replay
from app.acp.prompt_input import prompt_text
from app.acp.session import Session, open_session
from app.acp.updates import note

# ctxtui's stop reasons -> ACP's. A turn that failed (an API error, a context too full to send) is
# a JSON-RPC error instead (`_failed`): ACP's stop reasons are for turns that ended well or were cut.
STOP_REASONS: dict[str, StopReason] = {"end_turn": "end_turn", "stop_sequence": "end_turn", "compacted": "end_turn",
                "max_tokens": "max_tokens", "max_turns": "max_turn_requests", "budget": "max_turn_requests",
                "refusal": "refusal", "cancelled": "cancelled"}
COMMANDS = [AvailableCommand(name="compact", description="compact the context now (ctxtui's engine), with an "
                                                         "optional focus for the summary",
                             input=AvailableCommandInput(UnstructuredCommandInput(hint="focus (optional)")))]

log = logging.getLogger("ctxtui.acp")


FAILED_STOPS = frozenset({"error", "blocking"})


def _failed(stop: str, error: ev.Error | None) -> RequestError:
    """The prompt's error response: the loop's own message (what to do included), its kind, and
    auth_required (-32000) for a missing or refused key so an editor can ask for one."""
    message = error.message if error is not None else f"the turn ended with {stop}"
    data = {"details": scrub(message), "kind": error.kind if error is not None else stop,
            "retryable": bool(error and error.retryable)}
    return RequestError.auth_required(data) if data["kind"] == "auth" else RequestError.internal_error(data)


def _error(e: BaseException) -> RequestError:
    return RequestError.invalid_params({"details": scrub(str(e))})


def _check_folder(cwd: str) -> None:
    if not os.path.isabs(cwd) or not os.path.isdir(cwd):
        raise RequestError.invalid_params({"details": f"cwd must be the absolute path of a folder (got {cwd!r})"})


class CtxtuiAgent:
    """What the SDK's router calls. `options`: `ctxtui acp`'s flags, applied to every session."""

    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.sessions: dict[str, Session] = {}
        self.conn: Any = None
        self._background: set[asyncio.Task] = set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(load_session=True, mcp_capabilities=McpCapabilities(http=True),
                                                 prompt_capabilities=PromptCapabilities(embedded_context=True)),
            agent_info=Implementation(name="ctxtui", title="ctxtui", version=__version__))

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None     # no auth methods: the key comes from the environment, or the demo runs

    # The SDK's Agent protocol's parameters, in its order; additional_directories is not used (a
    # session works in `cwd`).
    async def new_session(self, cwd: str, additional_directories: list[str] | None = None, mcp_servers: Any = None,
                          **kwargs: Any) -> NewSessionResponse:
        session = self._open(cwd, mcp_servers=mcp_servers)
        # After the response (the client learns the id from it): the commands, and the gauge from the
        # start (system prompt and tools). A task made now sends after it: the response is queued
        # for sending as soon as this returns.
        task = asyncio.create_task(self._introduce(session))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return NewSessionResponse(session_id=session.id)

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           additional_directories: list[str] | None = None, **kwargs: Any) -> LoadSessionResponse:
        if not is_session_id(session_id):
            raise RequestError.invalid_params({"details": f"{session_id!r} is not a session id: session/load needs the "
                                                          "id of a ctxtui session, like 20261207T120133-bc18ad"})
        session = self.sessions.get(session_id)
        if session is None:
            session = self._open(cwd, resume=session_id, mcp_servers=mcp_servers)
            loaded = session.agent.session.loaded
            entries = loaded.all_entries if loaded is not None else []
        else:       # open here already: its log holds what it said so far (none yet: nothing to show)
            _check_folder(cwd)
            if os.path.realpath(cwd) != os.path.realpath(session.workspace):
                # A session's state (log, trust, .env, file history) is its folder's: it never moves.
                raise RequestError.invalid_params({"details": f"session {session_id} works in {session.workspace}, "
                                                              f"not in {cwd}: load it with cwd {session.workspace}, "
                                                              f"or start a new session in {cwd}"})
            path = session.agent.session.path
            entries = read_log(path).all_entries if path.is_file() else []
        for update in replay(entries, session.workspace):
            await self._send(session.id, update)
        await self._introduce(session)
        return LoadSessionResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        if session.busy or session.agent.busy:
            raise RequestError.invalid_request({"details": "a turn is already running in this session: wait for it "
                                                           "or send session/cancel"})
        text = prompt_text(prompt)
        session.prompting, session.cancelled = asyncio.current_task(), False
        try:
            stop = await self._turn(session, text)
            # A cancel wins over how the turn ended, even when it came as the turn was ending (ACP).
            return PromptResponse(stop_reason="cancelled" if session.cancelled else STOP_REASONS.get(stop, "end_turn"))
        finally:
            session.prompting = None

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """The flag ends a turn not started yet (`_turn` checks it last thing before starting one).
        The loop's task is cancelled a step later, not now: a task cancelled before its first step
        never runs its cleanup and the turn would wait for good; its first step is queued already,
        and the event loop runs callbacks in order. Only this prompt's turn, not a later one."""
        session = self.sessions.get(session_id)
        if session is not None and session.busy:
            session.cancelled, prompting = True, session.prompting

            def cancel_turn() -> None:
                if session.prompting is prompting:
                    session.agent.cancel()
            asyncio.get_running_loop().call_soon(cancel_turn)

    async def close_all(self) -> None:
        """End every session as a run ends: the turn cancelled, the log closed whole and resumable."""
        for session in list(self.sessions.values()):
            try:
                await session.agent.aclose()
            except Exception as e:  # noqa: BLE001 — one session's failure must not keep the others open
                log.warning("closing session %s: %s", session.id, one_line(scrub(str(e))))
        self.sessions.clear()

    # ----- the machinery ---------------------------------------------------------------------
    def _open(self, cwd: str, resume: str | None = None, mcp_servers: Any = None) -> Session:
        _check_folder(cwd)
        try:
            session = open_session(self.options, cwd, resume=resume, mcp_servers=mcp_servers)
        except (ConfigError, SessionWriteError) as e:
            raise _error(e) from None
        except Exception as e:  # noqa: BLE001 — a bug of ours: an error for the client, the details on stderr
            log.exception("opening a session failed")
            raise RequestError.internal_error({"details": scrub(f"{type(e).__name__}: {e}")}) from None
        self.sessions[session.id] = session
        return session

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"details": f"no session {session_id!r} in this ctxtui: "
                                                          "session/new or session/load first"})
        return session

    async def _introduce(self, session: Session) -> None:
        """The slash commands and the context figure now (sent again even when unchanged)."""
        try:
            await self._send(session.id, update_available_commands(COMMANDS))
            if (usage := session.translator.usage.update(session.agent.context_event(), force=True)) is not None:
                await self._send(session.id, usage)
        except ConnectionError:
            pass     # the client went away meanwhile

    async def _send(self, session_id: str, update: Any) -> None:
        await self.conn.session_update(session_id=session_id, update=update)

    async def _turn(self, session: Session, text: str) -> str:
        """Run the prompt (or `/compact [focus]`), sending its events; ctxtui's stop reason."""
        agent, stop, asks = session.agent, "error", set()
        failure: ev.Error | None = None
        for notice in session.take_notices():
            await self._send(session.id, note(notice))
        if session.cancelled:
            return "cancelled"      # before the turn started: nothing reached the model or the log
        command, _, rest = text.strip().partition(" ")
        events = agent.compact(rest.strip() or None) if command == "/compact" else agent.run(text)
        try:
            async for e in events:
                if isinstance(e, ev.PermissionRequest):
                    task = asyncio.create_task(permissions.ask(self.conn, session.id, e, session.workspace))
                    asks.add(task)
                    task.add_done_callback(asks.discard)
                    continue
                if isinstance(e, ev.TurnFinished):
                    stop = e.stop_reason
                elif isinstance(e, ev.Error) and e.kind != "tool":
                    failure = e
                for update in session.translator.updates(e):
                    await self._send(session.id, update)
        except ConnectionError:
            agent.cancel()       # the client went away: stop the turn; the log stays whole
            raise
        except asyncio.CancelledError:
            agent.cancel()       # the connection is closing
            raise
        finally:
            for task in list(asks):
                task.cancel()
        if stop in FAILED_STOPS and not session.cancelled:
            raise _failed(stop, failure)
        return stop
