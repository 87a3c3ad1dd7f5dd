"""Long synthetic trajectories for tests and bench/replay.py: a coding session of prompts, file
reads, greps and commands, shaped like a real one (results of a few hundred to a few thousand
tokens, references to files read earlier, pauses between prompts, now and then over an hour).

Deterministic for a seed. Message sizes are the token counts; the API-form content is built so
the engine's estimate of it is close to that size (4 characters a token), as a calibrated log's is.
"""
from __future__ import annotations

import hashlib
import random

from agent_core.logs.trajectory import Message, Request, Trajectory

TOOLS = ("read_file", "bash", "grep", "edit_file")
WORDS = ("parser", "token", "window", "cache", "result", "config", "entry", "layer", "budget", "stream",
         "report", "anchor", "round", "digest", "summary", "prefix", "index", "buffer", "limit", "event")


def _key(*parts: object) -> str:
    return hashlib.blake2b("\x00".join(map(str, parts)).encode(), digest_size=10).hexdigest()


def _filler(rng: random.Random, tokens: int, seed_words: tuple[str, ...] = ()) -> str:
    """About `tokens` tokens of prose-like text (4 characters a token)."""
    words = list(seed_words)
    chars = sum(len(w) + 1 for w in words)
    while chars < tokens * 4:
        w = rng.choice(WORDS)
        words.append(w)
        chars += len(w) + 1
    return " ".join(words)[: max(1, tokens * 4)]


def generate(requests: int = 400, *, seed: int = 7, files: int = 60, overhead: int = 12_000,
             model: str = "claude-sonnet-4-5", start: float = 1_750_000_000.0,
             long_pause_every: int = 0, path: str = "synthetic.jsonl") -> Trajectory:
    """A trajectory of `requests` model calls. Every turn starts with a prompt naming a file, runs
    1–8 tool rounds, and ends with a text answer; tool calls reference files of the project (often
    ones read before). Gaps: seconds between tool rounds, 1–4 minutes between prompts, and with
    `long_pause_every` a 70-minute pause every that many prompts."""
    rng = random.Random(seed)
    paths = [f"src/pkg{i % 7}/{rng.choice(WORDS)}_{i}.py" for i in range(files)]
    traj = Trajectory(path=path, session_id=f"synthetic-{seed}", model=model, overhead_tokens=overhead,
                      source="synthetic")
    now = start
    pending: list[Message] = []          # added before the next request
    prompts = 0
    rounds_left = 0
    total = overhead                     # the recorded context: nothing compacted
    for index in range(requests):
        if rounds_left == 0:                         # a new prompt
            prompts += 1
            if long_pause_every and prompts % long_pause_every == 0:
                now += 70 * 60
            else:
                now += rng.uniform(60, 240)
            target = rng.choice(paths)
            text = _filler(rng, rng.randint(30, 400), ("please", "look", "at", target, "and", "fix", "it"))
            pending.append(Message("user", "prompt", max(1, len(text) // 4), _key(seed, "p", index), text,
                                   timestamp=now, blocks=[{"type": "text", "text": text}]))
            rounds_left = rng.randint(1, 8)
        else:
            now += rng.uniform(2, 20)
        rounds_left -= 1
        out_tokens = rng.randint(80, 900)
        if rounds_left > 0:                          # a tool call
            tool = rng.choice(TOOLS)
            target = rng.choice(paths)
            tid = f"toolu_{seed}_{index}"
            inp = {"path": target} if tool in ("read_file", "edit_file") else \
                {"command": f"pytest -q {target}"} if tool == "bash" else {"pattern": f"def {rng.choice(WORDS)}"}
            refs = tuple(v for v in inp.values())
            say = _filler(rng, rng.randint(10, 80))
            resp = Message("assistant", "assistant", out_tokens, _key(seed, "a", index), f"{say} {inp}",
                           tools=(tool,), files=(target,) if "path" in inp else (), references=refs,
                           timestamp=now,
                           blocks=[{"type": "text", "text": say},
                                   {"type": "tool_use", "id": tid, "name": tool, "input": inp}])
            size = rng.choice((200, 600, 1_500, 3_000, 6_000)) + rng.randint(0, 400)
            result_text = _filler(rng, size, (target, "def", f"handle_{index}", "class", f"Thing{index}"))
            result = Message("user", "tool_result", size, _key(seed, "r", index), result_text, tools=(tool,),
                             files=(target,) if "path" in inp else (), timestamp=now + 1,
                             blocks=[{"type": "tool_result", "tool_use_id": tid, "content": result_text}])
            follow = [result]
        else:                                        # the answer that ends the turn
            text = _filler(rng, out_tokens)
            resp = Message("assistant", "assistant", out_tokens, _key(seed, "a", index), text, timestamp=now,
                           blocks=[{"type": "text", "text": text}])
            follow = []
        total += sum(m.tokens for m in pending)
        traj.requests.append(Request(index=index, timestamp=now, model=model, added=pending, response=resp,
                                     usage={"input": 3, "cache_read": max(0, total - 3), "output": out_tokens}))
        pending = [resp, *follow]
    return traj
