"""The OS sandbox that bash and shell mode run in (bubblewrap on Linux): the workspace and a
private /tmp writable, the rest read-only, secret folders hidden, a PID namespace of its own and no
network unless allowed. `settings` says what the user chose, `probe` whether it can run here,
`bwrap_args` how a command is wrapped, `proxy` which hosts are reachable, `sandbox` ties them."""
