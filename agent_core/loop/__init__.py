"""The agent loop: one user turn at a time, compaction before every model call, and the
builder that wires a loop from a Config."""
