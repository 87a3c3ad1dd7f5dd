"""A loopback fake of the Anthropic Messages API for tests that drive the real `anthropic` SDK.

    with FakeAnthropic([reply("hi"), rate_limit(), reply(tool_use("bash", {"command": "ls"}))]) as fake:
        client = AnthropicClient(api_key="test-key", base_url=fake.base_url)
        ...
        fake.message_requests  # every request body received

Standalone (for subprocess tests): `python -m tests.fake_anthropic --script FILE`; it prints
`FAKE_ANTHROPIC_URL=http://127.0.0.1:PORT` on its first line.
"""
from tests.fake_anthropic.script import (FAULTS, SUMMARY_SECTIONS, cut, echo_responder, fault, is_summary_request,
                                         last_user_text, load_script, malformed, overloaded, prompt_too_long,
                                         rate_limit, reply, server_error, text, thinking, tool_use)
from tests.fake_anthropic.server import FakeAnthropic, RecordedRequest
from tests.fake_anthropic.usage import PrefixCache, count_input, count_output

__all__ = [
    "FAULTS", "FakeAnthropic", "PrefixCache", "RecordedRequest", "SUMMARY_SECTIONS", "count_input", "count_output",
    "cut", "echo_responder", "is_summary_request", "fault", "last_user_text", "load_script", "malformed", "overloaded",
    "prompt_too_long", "rate_limit", "reply", "server_error", "text", "thinking", "tool_use",
]
