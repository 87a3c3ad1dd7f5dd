"""Helpers of the offline demo model (agent_core/demo_model.py): reading the request, knowing the
workspace, planning tool rounds, writing answers and summaries, simulating the prompt cache."""
