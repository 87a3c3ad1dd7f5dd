"""`ctxtui replay`: what a recorded session would have cost, and what the model would still have
seen, under other compaction policies — without calling a model (docs/replay.md)."""
