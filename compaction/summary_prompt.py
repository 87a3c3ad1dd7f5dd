"""The summary request and what is done with its answer (layer 6, LLM compaction). Our own wording.

The model drafts in an <analysis> block (it improves the summary) and writes the result in a
<summary> block; only the summary survives. Nine sections, so nothing the next turn needs — above
all the user's own words and the current step — is left to chance. There is no system prompt of
its own: the request shares the main call's, so the conversation before the prompt is read from
the prompt cache.
"""
from __future__ import annotations

import re

SECTIONS = (
    ("Primary request and intent", "what the user asked for, in full, including later changes of mind"),
    ("Key technical concepts", "languages, frameworks, libraries, tools and ideas the work relies on"),
    ("Files and code sections", "every file read, created or changed: its path, why it matters, and the "
                                "exact code of the important parts (signatures, snippets, edits)"),
    ("Errors and fixes", "each error met, what caused it and how it was fixed; note any correction "
                         "the user gave"),
    ("Problem solving", "problems solved so far and any investigation still open"),
    ("All user messages", "every message the user wrote (not tool results), in order, quoted or "
                          "closely paraphrased"),
    ("Pending tasks", "what the user asked for that is not done yet"),
    ("Current work", "precisely what was being done just before this request, with file names and code"),
    ("Next step", "the single next action, only if it follows directly from the user's latest request "
                  "and the current work; quote the latest request to show it. If the last task was "
                  "finished, name no new task unless the user asked for it"),
)

_PREAMBLE = """Write a summary of the conversation so far. Answer in plain text only.
Do not call any tool: every tool call will be refused and this is your only turn. Everything you
need is in the conversation above.

First think it through inside <analysis> … </analysis>: go through the conversation in order and
note, for each part, what the user asked, what you did, the decisions taken, file names, code,
commands, errors and how they were fixed, and any feedback from the user. Check that nothing
important is missing or wrong.

Then write the summary inside <summary> … </summary> with these nine numbered sections:
"""

_CLOSING = """
Be specific and complete: the summary replaces the conversation, and only it and the recent
user messages will remain. Reply with the <analysis> block followed by the <summary> block."""


def build_summary_prompt(instructions: str | None = None) -> str:
    """The final user turn of the summary request; `instructions` is a manual /compact focus."""
    lines = [f"{i}. {name}: {what}." for i, (name, what) in enumerate(SECTIONS, 1)]
    prompt = _PREAMBLE + "\n".join(lines) + "\n"
    if instructions and instructions.strip():
        prompt += f"\nThe user asked this summary to focus on: {instructions.strip()}\n"
    return prompt + _CLOSING


_ANALYSIS = re.compile(r"<analysis>.*?(</analysis>|$)", re.S | re.I)
_SUMMARY = re.compile(r"<summary>(.*?)(</summary>|$)", re.S | re.I)


def format_summary(raw: str) -> str:
    """The summary without its drafting block: the <summary> content if there is one, else the
    text with any <analysis> block removed."""
    m = _SUMMARY.search(raw or "")
    if m:
        text = m.group(1)
    else:
        text = _ANALYSIS.sub("", raw or "")
    text = re.sub(r"</?(analysis|summary)>", "", text, flags=re.I)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


_ERROR_START = re.compile(r"^\s*(api error|error:|prompt is too long|request failed|an error occurred|"
                          r"internal server error|overloaded|rate limit|i can(no|')t (help|summari[sz]e)|"
                          r"i'm sorry, but)", re.I)


def looks_like_error(text: str) -> bool:
    """True for an answer that is an error or a refusal rather than a summary; such a summary
    must never replace the history."""
    if not text or not text.strip():
        return True
    if not re.search(r"[A-Za-z0-9]", text):
        return True
    return len(text) < 2_000 and bool(_ERROR_START.search(text))


def summary_message(summary: str, transcript_path: str | None, *, recent_kept: bool, auto: bool,
                    source: str = "summary") -> str:
    """The user-turn text that carries the summary into the new history."""
    what = "a summary" if source == "summary" else "the session notes"
    text = (f"This session continues an earlier conversation that was compacted to fit the context window. "
            f"Below is {what} of the earlier part.\n\n{summary}")
    if transcript_path:
        text += (f"\n\nThe full conversation before compaction is saved at {transcript_path}. Read it if you "
                 "need exact details (code you wrote, error messages, command output).")
    if recent_kept:
        text += "\n\nThe most recent messages follow verbatim."
    if auto:
        text += ("\n\nContinue the work from where it stopped. Do not ask the user to repeat anything, do not "
                 "recap the summary and do not announce that you are resuming.")
    return text
