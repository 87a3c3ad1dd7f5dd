"""The hint under an error in the conversation adds what the loop's message leaves out: when the
message already names the remedy (as the loop's own messages do), the hint does not say it again."""
from __future__ import annotations

import pytest

from app.tui.widgets.conversation.error_message import ERROR_HINTS, SAID_ALREADY, ErrorRecord, hint_for

# What the loop says for each kind (agent_core/providers/errors.py, anthropic_client.py, the
# pipeline's blocking message in compaction/pipeline.py).
LOOP_SAYS = {
    "connection": "Could not connect to the API at http://127.0.0.1:9: ConnectError. Check your network "
                  "connection and ANTHROPIC_BASE_URL.",
    "auth": "No API key: set ANTHROPIC_API_KEY, or run with --model demo to stay offline.",
    "prompt_too_long": "The request does not fit the model's context window (too long). Run /compact, or set "
                       "CTXTUI_CONTEXT_WINDOW to the model's real window.",
    "blocking": "The context is full: 180,000 tokens, at or above the blocking limit of 177,000 (window "
                "200,000). Nothing was sent to the model. Run /compact to summarise the conversation, then "
                "send your message again.",
}


@pytest.mark.parametrize("kind", sorted(SAID_ALREADY))
def test_a_hint_never_repeats_what_the_message_says(kind):
    marker, short = SAID_ALREADY[kind]
    said = LOOP_SAYS[kind]
    assert marker in said
    assert hint_for(kind, said) == short and marker not in short
    text = ErrorRecord(kind, said).content().plain
    assert text.count(marker) == 1, text
    # a message without the remedy gets the whole hint, which names it
    assert hint_for(kind, "something failed") == ERROR_HINTS[kind] and marker in ERROR_HINTS[kind]


def test_kinds_without_a_marker_keep_their_hint():
    assert hint_for("server", "The API had an internal error.") == ERROR_HINTS["server"]
    assert hint_for("no-such-kind", "x") == ""
