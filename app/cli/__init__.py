"""Every command-line entry point: the dispatcher (`ctxtui`), headless, usage, statusline, replay, watch."""
