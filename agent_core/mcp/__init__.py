"""MCP servers: their configuration (no SDK import), and the connections and hub, loaded only when a
session names a server."""
