"""The summary request and what is done with its answer (layer 6, LLM compaction). Our own wording,
in compaction/prompts/summary.txt.

The model drafts in an <analysis> block (it improves the summary) and writes the result in a
<summary> block; only the summary survives. Nine sections, so nothing the next turn needs — above
all the user's own words and the current step — is left to chance. There is no system prompt of
its own: the request shares the main call's, so the conversation before the prompt is read from
the prompt cache.
"""
from __future__ import annotations

import re
from importlib import resources

# The prompt's wording is package data (compaction/prompts/summary.txt): its numbered lines are the
# sections, and the line `{focus}` is where a manual /compact focus goes (dropped when there is none).
_TEMPLATE = resources.files("compaction").joinpath("prompts", "summary.txt").read_text(encoding="utf-8").rstrip("\n")
_FOCUS = "{focus}\n"
_SECTION = re.compile(r"^\d+\. (.+?): (.+)\.$", re.M)

SECTIONS: tuple[tuple[str, str], ...] = tuple((m.group(1), m.group(2)) for m in _SECTION.finditer(_TEMPLATE))


def build_summary_prompt(instructions: str | None = None) -> str:
    """The final user turn of the summary request; `instructions` is a manual /compact focus."""
    focus = ""
    if instructions and instructions.strip():
        focus = f"\nThe user asked this summary to focus on: {instructions.strip()}\n"
    return _TEMPLATE.replace(_FOCUS, focus, 1)


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
