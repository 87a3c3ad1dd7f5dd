"""The sandbox's pure parts: settings parsing, host matching, the bubblewrap layout (mount order,
what is hidden, symlinks), the proxy's request parsing, and the permission mode it gives bash."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_core.os_sandbox import probe
from agent_core.os_sandbox.bwrap_args import PROXY_SOCKET, bwrap_argv, hidden_targets, proxy_env, relay_command
from agent_core.os_sandbox.proxy import parse_target
from agent_core.os_sandbox.sandbox import OsSandbox
from agent_core.os_sandbox.settings import SandboxSettings, host_allowed, parse_mode, parse_network, parse_paths


@pytest.mark.parametrize("text, mode", [("auto-allow", "auto-allow"), ("AUTO", "auto-allow"), ("on", "auto-allow"),
                                        (" ask ", "ask"), ("off", "off"), ("false", "off"), (True, "auto-allow")])
def test_modes(text, mode):
    assert parse_mode(text) == mode


@pytest.mark.parametrize("bad", ["", "sometimes", 3, None, "allow"])
def test_bad_modes(bad):
    with pytest.raises(ValueError):
        parse_mode(bad)


def test_network_forms():
    assert parse_network("none") == "none" and parse_network(" ALL ") == "all"
    assert parse_network("example.com, *.pypi.org,127.0.0.1") == ("example.com", "*.pypi.org", "127.0.0.1")
    assert parse_network(["a.example", "b.example"]) == ("a.example", "b.example")
    for bad in ("", "all,example.com", "exa mple.com", "http://x.com", "*", "*.*.com", "none,x.com", 5):
        with pytest.raises(ValueError):
            parse_network(bad)


def test_paths_must_be_absolute():
    assert parse_paths("/a,/b") == (Path("/a"), Path("/b"))
    for bad in ("rel/path", "", [3], "~nosuchuser-xyz/x"):
        with pytest.raises(ValueError):
            parse_paths(bad)


@pytest.mark.parametrize("host, allowed", [("example.com", True), ("EXAMPLE.com.", True), ("api.example.com", False),
                                           ("pypi.org", False), ("files.pypi.org", True), ("a.b.pypi.org", True),
                                           ("evilpypi.org", False), ("pypi.org.evil", False), ("[::1]", True)])
def test_host_patterns(host, allowed):
    assert host_allowed(host, ("example.com", "*.pypi.org", "::1")) is allowed


def test_the_layout_mounts_in_order(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "home" / ".ssh"
    secret.mkdir(parents=True)
    netrc = tmp_path / "home" / ".netrc"
    netrc.write_text("x")
    argv = bwrap_argv("/usr/bin/bwrap", ["/bin/bash", "-c", "ls"], workspace=ws, hide=[secret, netrc,
                      tmp_path / "missing"])
    joined = " ".join(argv)
    assert argv[-3:] == ["/bin/bash", "-c", "ls"] and "--unshare-net" in argv and "--unshare-pid" in argv
    # the root read-only first, /tmp private, then the workspace writable, then the hidden paths over it all
    assert joined.index("--ro-bind / /") < joined.index("--tmpfs /tmp") < joined.index(f"--bind {ws} {ws}")
    assert joined.index(f"--bind {ws} {ws}") < joined.index(f"--tmpfs {secret} --remount-ro {secret}")
    assert f"--ro-bind /dev/null {netrc}" in joined and "missing" not in joined
    assert "--unshare-net" not in bwrap_argv("bwrap", ["true"], workspace=ws, network="all")


def test_a_hidden_path_through_a_symlink_hides_its_target(tmp_path):
    real = tmp_path / "keys"
    real.mkdir()
    link = tmp_path / ".ssh"
    link.symlink_to(real)
    assert hidden_targets([link], []) == [(str(real), True)]


def test_a_path_inside_a_hidden_folder_is_hidden_with_it(tmp_path):
    """ctxtui's state root and this workspace's folder in it: mounting over the inner one too would
    need a mount point in the outer one's read-only stand-in, and bubblewrap fails to start."""
    root = tmp_path / "state"
    inner = root / "projects" / "ws-1"
    inner.mkdir(parents=True)
    (root / "key").write_text("x")
    assert hidden_targets([inner, root / "key", root], []) == [(str(root), True)]


def test_a_secret_folder_holding_the_workspace_is_not_hidden(tmp_path):
    """Hiding it would hide the work itself (a project kept under ~/.config/gh, say)."""
    outer = tmp_path / ".config" / "gh"
    ws = outer / "project"
    ws.mkdir(parents=True)
    assert hidden_targets([outer], [ws]) == []


def test_the_relay_and_proxy_variables():
    cmd = relay_command("/usr/bin/socat", ["/bin/bash", "-c", "curl x"])
    assert cmd[0] == "/bin/sh" and cmd[3:] == ["/usr/bin/socat", "/bin/bash", "-c", "curl x"]
    assert PROXY_SOCKET in cmd[2]
    env = proxy_env({"PATH": "/bin"}, ("127.0.0.1",))
    assert env["https_proxy"] == env["HTTP_PROXY"] == "http://127.0.0.1:3128"
    assert env["NO_PROXY"] == "localhost,::1"      # a listed loopback is the host's, through the proxy


@pytest.mark.parametrize("head, want", [
    (b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n", ("CONNECT", "pypi.org", 443)),
    (b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n", ("CONNECT", "::1", 8443)),
    (b"GET http://user:pw@example.com/a?b HTTP/1.1\r\nHost: example.com\r\nProxy-Authorization: x\r\n\r\n",
     ("GET", "example.com", 80)),
    (b"GET /relative HTTP/1.1\r\n\r\n", None),
    (b"garbage\r\n\r\n", None),
    (b"GET ftp://x/ HTTP/1.1\r\n\r\n", None),
])
def test_requests_the_proxy_serves(head, want):
    got = parse_target(head)
    assert (got[:3] if got else None) == want


def test_a_plain_request_is_forwarded_in_origin_form_without_proxy_headers():
    _, _, _, forward = parse_target(b"GET http://example.com:8080/a?b HTTP/1.1\r\nHost: example.com\r\n"
                                    b"Proxy-Authorization: secret\r\nConnection: keep-alive\r\n\r\n")
    assert forward.startswith(b"GET /a?b HTTP/1.1\r\n") and b"Proxy-Authorization" not in forward
    assert forward.endswith(b"Connection: close\r\n\r\n")


def unavailable(bwrap=None):
    return probe.Availability(False, problem="bubblewrap (bwrap) is not installed", fix="install it")


@pytest.mark.parametrize("mode, configured, ok, want", [
    ("off", "ask", True, "ask"), ("off", "allow", True, "allow"),
    ("auto-allow", "ask", True, "allow"), ("auto-allow", "deny", True, "deny"),
    ("ask", "ask", True, "ask"), ("ask", "allow", True, "allow"),
    ("auto-allow", "allow", False, "ask"), ("ask", "allow", False, "ask"), ("auto-allow", "deny", False, "deny"),
])
def test_the_permission_bash_gets(tmp_path, monkeypatch, mode, configured, ok, want):
    if not ok:
        monkeypatch.setattr(probe, "check", unavailable)
    else:
        monkeypatch.setattr(probe, "check", lambda bwrap=None: probe.Availability(True, "/usr/bin/bwrap"))
    sb = OsSandbox(SandboxSettings(mode=mode), tmp_path)
    assert sb.bash_mode(configured) == want


def test_status_words(tmp_path, monkeypatch):
    monkeypatch.setattr(probe, "check", unavailable)
    sb = OsSandbox(SandboxSettings(mode="auto-allow"), tmp_path, home=tmp_path)
    status = sb.status()
    assert not status.confined and "not installed" in status.problem and status.short().startswith("sandbox unavail")
    sb.set_mode("off")
    assert sb.status().short() == "sandbox off" and sb.status().problem == ""


def test_the_probe_names_a_missing_binary():
    found = probe.check(os.devnull + "-no-such-bwrap")
    assert not found.ok and "could not be run" in found.problem and "apt-get install bubblewrap" in found.fix

