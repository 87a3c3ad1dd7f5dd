"""A paged-out answer: its Markdown source. Unlike the other records it does not build its own
widget: the conversation does (`container.new_answer`), so that Textual's Markdown, with
markdown_it and the Pygments highlighter (about 50 ms of imports), loads with the first answer
shown and not before the first paint of a session that has none yet."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class AssistantRecord:
    """A paged-out answer: its Markdown source (already passed through `visible`)."""
    text: str
