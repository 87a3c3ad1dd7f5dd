"""Model clients behind one protocol: the Anthropic Messages API and the offline demo model."""
