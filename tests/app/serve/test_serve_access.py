"""The access rules of `ctxtui serve` (app/serve/access.py), as plain functions of a request's parts:
the Host must be the server's loopback address, the path must start with the token, and a websocket
(or any request that sends an Origin) must come from the server's own page."""
from __future__ import annotations

import pytest

from app.serve.access import BAD_HOST, BAD_ORIGIN, BAD_TOKEN, Access, new_token

TOKEN = new_token()
ACCESS = Access.for_address(TOKEN, "127.0.0.1", 8123)
HOST = "127.0.0.1:8123"
ORIGIN = "http://127.0.0.1:8123"


def refusal(path: str, *, host: str | None = HOST, origin: str | None = None, websocket: bool = False) -> str | None:
    return ACCESS.refusal(host=host, path=path, origin=origin, websocket=websocket)


def test_tokens_are_long_random_and_url_safe():
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50
    assert all(len(t) >= 43 and t.replace("-", "").replace("_", "").isalnum() for t in tokens)


@pytest.mark.parametrize("path", ["/", "/ws", "/static/js/textual.js", "/download/abc", "/favicon.ico", ""])
def test_no_token_is_refused(path):
    assert refusal(path) == BAD_TOKEN


@pytest.mark.parametrize("wrong", [TOKEN[:-1], TOKEN + "x", TOKEN.upper() if TOKEN.upper() != TOKEN else TOKEN + "A",
                                   "x" * len(TOKEN), "é" * len(TOKEN), "%2F", " " + TOKEN],
                         ids=["cut", "longer", "upper", "same-length", "non-ascii", "slash", "leading-space"])
def test_a_wrong_token_is_refused(wrong):
    assert refusal(f"/{wrong}/") == BAD_TOKEN
    assert refusal(f"/{wrong}/ws", origin=ORIGIN, websocket=True) == BAD_TOKEN


def test_the_token_must_be_the_whole_first_segment():
    assert refusal(f"/x/{TOKEN}/") == BAD_TOKEN
    assert refusal(f"/?token={TOKEN}") == BAD_TOKEN
    assert refusal(f"/{TOKEN}extra/") == BAD_TOKEN


@pytest.mark.parametrize("path", ["/", "/static/css/xterm.css", "/download/k"])
def test_the_right_token_lets_every_route_through(path):
    assert refusal(f"/{TOKEN}{path}") is None


def test_the_right_token_and_origin_let_the_websocket_through():
    assert refusal(f"/{TOKEN}/ws", origin=ORIGIN, websocket=True) is None
    assert refusal(f"/{TOKEN}/ws", host="localhost:8123", origin="http://localhost:8123", websocket=True) is None


@pytest.mark.parametrize("origin", [None, "null", "http://evil.example", "http://127.0.0.1:8124",
                                    "https://127.0.0.1:8123", "http://127.0.0.1:8123.evil.example",
                                    "http://127.0.0.2:8123"])
def test_a_websocket_from_another_origin_is_refused(origin):
    assert refusal(f"/{TOKEN}/ws", origin=origin, websocket=True) == BAD_ORIGIN


def test_any_request_that_sends_a_foreign_origin_is_refused():
    assert refusal(f"/{TOKEN}/", origin="http://evil.example") == BAD_ORIGIN
    assert refusal(f"/{TOKEN}/", origin=ORIGIN) is None


@pytest.mark.parametrize("host", [None, "", "evil.example:8123", "127.0.0.1:8124", "127.0.0.1", "0.0.0.0:8123",
                                  "127.0.0.1:8123.evil.example"])
def test_a_request_for_another_host_is_refused_even_with_the_token(host):
    """DNS rebinding: another site's name pointed at 127.0.0.1 arrives with that name as Host."""
    assert refusal(f"/{TOKEN}/", host=host) == BAD_HOST
    assert refusal(f"/{TOKEN}/ws", host=host, origin=ORIGIN, websocket=True) == BAD_HOST


def test_refusals_repeat_nothing_of_the_request():
    for text in (BAD_HOST, BAD_TOKEN, BAD_ORIGIN):
        assert TOKEN not in text and text.endswith("\n") and len(text) < 120


def test_an_ipv6_loopback_server_names_itself_in_brackets():
    access = Access.for_address(TOKEN, "::1", 9000)
    assert access.refusal(host="[::1]:9000", path=f"/{TOKEN}/ws", origin="http://[::1]:9000", websocket=True) is None
    assert "http://[::1]:9000" in access.origins
