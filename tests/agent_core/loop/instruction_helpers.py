"""Twenty rename instructions over twenty modules, with a scripted model that reads the module each
instruction names: a long session of real tool rounds through the fake server."""
from __future__ import annotations

from tests.fake_anthropic import echo_responder, is_summary_request, reply, tool_use


def results_of(msg: dict) -> list[dict]:
    return [b for b in msg["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


INSTRUCTIONS = [f"Instruction {k:02d}: in mod{k}.py rename helper_{k} to compute_{k}, keep the old name as an alias, "
                f"and add a docstring that explains the {k} retries and the timeout in seconds." for k in range(20)]


def instruction_session(ws, window: int):
    """Twenty 3–4.5 KB modules, and a scripted model that reads the module each instruction names,
    then answers at a length that fills `window` over the twenty prompts."""
    for k in range(20):
        (ws / f"mod{k}.py").write_text("".join(f"def helper_{k}_{i}(x):\n    return x + {i}  # step {i} of the chain\n"
                                               for i in range(40 + 2 * k)))

    def responder(body):
        if is_summary_request(body):
            return echo_responder(body)
        last = body["messages"][-1]
        if results_of(last):
            return reply("Done: " + "I renamed it, kept the alias and wrote the docstring. " * (window // 250))
        k = next((k for k in range(20) if INSTRUCTIONS[k] in str(last)), 0)
        return reply(f"Reading mod{k}.py first.", tool_use("read_file", {"path": f"mod{k}.py"}))
    return responder
