"""Textual's DataTable keeps its rendered cells, rows and lines in caches keyed by an update
counter, and sizes them for a big table (10,000 cells, 1,000 rows and lines). Every change to the
data moves the counter on, so the old entries can never be read again, yet stay until the cache is
full: the timeline (a row per compaction) and the cost pane (new figures after every model call)
grew by about 0.1 MB a turn, for thousands of turns. `bound_render_caches` sizes the caches for
what a side pane shows, so a stale entry is evicted within a few updates."""
from __future__ import annotations

from textual.widgets import DataTable

# the render caches DataTable keeps (private attributes: a Textual without one is left as it is)
_ROW_CACHES = ("_row_render_cache", "_row_renderable_cache", "_line_cache")
_CELL_CACHE = "_cell_render_cache"


def bound_render_caches(table: DataTable, rows: int = 64, columns: int = 8) -> None:
    """Room for a few screenfuls of `rows` × `columns` cells: every hit a redraw can have."""
    for name in _ROW_CACHES:
        cache = getattr(table, name, None)
        if cache is not None and hasattr(cache, "maxsize"):
            cache.maxsize = rows * 4
    cells = getattr(table, _CELL_CACHE, None)
    if cells is not None and hasattr(cells, "maxsize"):
        cells.maxsize = rows * columns * 4
