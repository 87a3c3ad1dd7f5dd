"""Updating a Static without laying the whole screen out when its size stays the same.

`Static.update` asks for a layout, and in Textual any layout request arranges the whole screen
again (about 20 ms with a conversation mounted). The cost pane's summary changes with every model
call and keeps its size nearly always: three screen layouts a turn for nothing."""
from __future__ import annotations

from textual.content import Content
from textual.widgets import Static


def update_in_place(widget: Static, content: Content | str) -> None:
    """`widget.update(content)`, with a layout only if the new content's size differs."""
    if not widget.is_mounted or not widget.size:
        widget.update(content)
        return
    before = widget.size
    widget.update(content, layout=False)
    styles, container, viewport = widget.styles, widget.size, widget.app.size
    width = (widget.get_content_width(container, viewport)
             if styles.width is not None and styles.width.is_auto else before.width)
    height = (widget.get_content_height(container, viewport, width)
              if styles.height is not None and styles.height.is_auto else before.height)
    if (width, height) != (before.width, before.height):
        widget.refresh(layout=True)
