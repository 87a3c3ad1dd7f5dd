"""`ctxtui acp`: ctxtui as an Agent Client Protocol agent over stdio, for editors (docs/acp.md).

The same loop, engine, sessions and logs as the TUI and headless; only the front-end differs: the
loop's events become ACP session updates, its permission asks become session/request_permission.
The `acp` SDK is imported by these modules alone, and only once `ctxtui acp` runs.
"""
