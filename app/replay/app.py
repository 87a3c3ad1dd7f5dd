"""`ctxtui replay` in a terminal: one ReplayScreen over the replay engine's report.

`app/cli/main.py` parses the arguments into `ReplayOptions` and calls `run_app(options)`. The engine
(`agent_core.replay.runner.run_replay`) is the default loader; tests inject their own, so the
screen never depends on real logs.
"""
from __future__ import annotations


from textual.app import App

from app.stylesheets import stylesheets
from agent_core.replay.options import ReplayOptions
from agent_core.replay.runner import run_replay

from app.replay.screen import Loader, ReplayScreen



class ReplayApp(App[int]):
    """See module docstring. The exit result is 1 when the replay failed, else 0."""

    TITLE = "ctxtui replay"
    CSS_PATH = stylesheets("replay.tcss")

    def __init__(self, options: ReplayOptions | None, load: Loader = run_replay, *, theme: str | None = None) -> None:
        super().__init__()
        self.options = options
        self.load = load
        self.theme_name = theme
        self._screen: ReplayScreen | None = None

    def get_default_screen(self) -> ReplayScreen:
        self._screen = ReplayScreen(self.options, self.load)
        return self._screen

    @property
    def replay_screen(self) -> ReplayScreen:
        """The one screen; still readable after the app has exited (run_app asks it how it went)."""
        assert self._screen is not None, "the app has not started"
        return self._screen

    @property
    def failed(self) -> bool:
        return self._screen is not None and self._screen.phase == "error"

    def on_mount(self) -> None:
        if self.theme_name:
            self.theme = self.theme_name


def run_app(options: ReplayOptions, load: Loader = run_replay) -> int:
    """Open the replay screen until the user quits: 0, or 1 when the replay failed."""
    app = ReplayApp(options, load)
    result = app.run()
    if result is not None:
        return int(result)
    return 1 if app.return_code or app.failed else 0
