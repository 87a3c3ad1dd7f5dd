"""Helpers of the offline demo model (model.py here): reading the request, knowing the
workspace, planning tool rounds, writing answers and summaries, simulating the prompt cache."""
