"""`ctxtui serve` end to end, in a real headless Chromium (Debian's /usr/bin/chromium, driven by
Playwright; never a browser of Playwright's own): the printed URL opens the TUI, on the offline demo
model, and the terminal in the page is fed the context pane; the same address without the token is
refused with a 403. Nothing leaves loopback: the browser's every other request is aborted.

Without /usr/bin/chromium the test is skipped on a developer's machine and fails on CI (CI set),
which must really run it (.ci/run installs Debian's chromium when it is missing)."""
from __future__ import annotations

import os
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.app.serve.serve_helpers import URL, clean_env, read_url, serve_process, stop_group

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CONTROL = re.compile(r"\x1b\[[0-9;?<>=$ ]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b[=>78]")
# The context pane's title and its plot's first words (app/widgets/context_pane.py, context_plot.py):
# the plot's line is in no other pane.
CONTEXT_PANE = ("Context", "context over turns")


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def terminal_text(frames: list[bytes | str]) -> str:
    """What the page's terminal was fed, its control sequences taken out."""
    data = "".join(f.decode("utf-8", "replace") if isinstance(f, bytes) else "" for f in frames)
    return CONTROL.sub("", data)


@pytest.mark.slow
def test_the_printed_url_shows_the_tui_with_its_context_pane_and_nothing_without_the_token(tmp_path):
    if not CHROMIUM.exists():
        if on_ci():
            pytest.fail(f"{CHROMIUM} is missing on CI: .ci/run installs Debian's chromium package")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium); CI runs this test")
    from playwright.sync_api import sync_playwright

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "README.md").write_text("# a project\n")
    proc = serve_process(["--port", "0", "--", "--workspace", str(workspace)], env=clean_env(tmp_path),
                         cwd=workspace)
    try:
        url, _ = read_url(proc)
        port, token = URL.search(url).groups()
        frames: list[bytes | str] = []
        sockets: list[str] = []
        outside: list[str] = []

        def keep_to_loopback(route) -> None:
            if urlsplit(route.request.url).hostname == "127.0.0.1":
                route.continue_()
            else:
                outside.append(route.request.url)
                route.abort()

        def on_websocket(ws) -> None:
            sockets.append(ws.url)
            ws.on("framereceived", lambda payload: frames.append(payload))

        with sync_playwright() as p:
            browser = p.chromium.launch_persistent_context(str(tmp_path / "chromium-profile"), headless=True,
                                                           executable_path=str(CHROMIUM), args=ARGS)
            try:
                page = browser.new_page()
                page.route("**/*", keep_to_loopback)
                page.on("websocket", on_websocket)
                response = page.goto(url)
                assert response is not None and response.status == 200
                deadline = time.monotonic() + 90
                while time.monotonic() < deadline and not all(s in terminal_text(frames) for s in CONTEXT_PANE):
                    page.wait_for_timeout(250)
                shown = terminal_text(frames)
                assert all(s in shown for s in CONTEXT_PANE), shown[-3000:]
                assert "Demo model, offline" in shown         # no key: the demo model, as meant
                assert len(sockets) == 1 and sockets[0].startswith(f"ws://127.0.0.1:{port}/{token}/ws?width=")
                page.wait_for_function("document.body.classList.contains('-first-byte')", timeout=30_000)

                refused = page.goto(f"http://127.0.0.1:{port}/")
                assert refused is not None and refused.status == 403
                assert "Forbidden" in page.inner_text("body") and token not in page.content()
            finally:
                browser.close()
        # the page asked nothing of another host: the CSP keeps out textual-serve's Google font
        assert outside == []
    finally:
        printed = stop_group(proc)
    assert token not in printed          # after the URL line, nothing repeated the token
