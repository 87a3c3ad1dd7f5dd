"""Tests of watch's core (agent_core/watch)."""
