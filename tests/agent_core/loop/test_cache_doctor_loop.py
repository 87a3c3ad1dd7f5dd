"""The cache doctor on ctxtui's own requests (issue 27), through the real SDK against the fake
server and its prefix cache: a request that reads short of what the one before it left gets a
`cache_miss` event naming where its prefix changed and why — a compaction's rewrite, a changed tool
list or system prompt, an expired TTL, a model switch across a resume — and steady turns get none."""
from __future__ import annotations

from agent_core import events as ev
from agent_core.loop import cache_watch
from compaction.accounting.cache_doctor import digest, shape_of
from tests.agent_helpers import collect, fake_agent, make_workspace, of
from tests.fake_anthropic import FakeAnthropic, is_summary_request, reply

WINDOW = 60_000
LONG = "The parser reads the header, then the body, and checks each field against the schema. " * 60


def responder(body):
    if is_summary_request(body):
        return reply("<summary>The user asked about the parser; it reads the header then the body.</summary>")
    return reply(LONG)


async def turns(agent, *prompts) -> list[ev.Event]:
    out: list[ev.Event] = []
    for p in prompts:
        out += await collect(agent.run(p))
    return out


async def test_steady_turns_have_no_miss_and_a_compaction_rewrite_is_named(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=responder) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=WINDOW)
        events = await turns(agent, "how does the parser work?", "and the body?", "and the schema?")
        assert of(events, ev.CacheMiss) == []
        requests = agent.cache_watch.requests
        await collect(agent.compact("the parser"))
        events = await turns(agent, "go on")
        await agent.aclose()
    [miss] = of(events, ev.CacheMiss)
    assert (miss.where, miss.why, miss.request) == ("message 1", "compaction rewrite", requests + 1)
    assert miss.read < miss.expected and miss.short == miss.expected - miss.read
    assert miss.text.startswith(f"request {requests + 1} read {miss.read:,} of {miss.expected:,} cached tokens")


async def test_a_changed_tool_list_and_system_prompt_are_named(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=responder) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=WINDOW)
        await turns(agent, "how does the parser work?", "and the body?")
        agent.head.tool_defs = agent.head.tool_defs[:-1]          # a tool went away (an MCP server left)
        [tools] = of(await turns(agent, "and now?"), ev.CacheMiss)
        agent.system_prompt = agent.system_prompt + "\nA memory file changed."
        [system] = of(await turns(agent, "and then?"), ev.CacheMiss)
        await agent.aclose()
    assert (tools.where, tools.why) == ("tools", "tool list changed") and tools.read == 0
    assert (system.where, system.why) == ("system", None) and 0 < system.read < system.expected


async def test_an_expired_cache_says_ttl(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=responder) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=WINDOW)
        await turns(agent, "how does the parser work?", "and the body?")
        later = agent.clock() + 600
        agent.clock = lambda: later        # ten minutes on: the 5-minute entry is gone
        fake.cache.clear()
        [miss] = of(await turns(agent, "still there?"), ev.CacheMiss)
        await agent.aclose()
    assert (miss.where, miss.why, miss.read) == (None, "TTL expired", 0)
    assert miss.text.endswith("the prefix did not change (TTL expired)")


async def test_a_resume_on_another_model_says_model_switch(tmp_path):
    ws = make_workspace(tmp_path)
    with FakeAnthropic(responder=responder) as fake:
        agent = fake_agent(ws, fake.base_url, context_window=WINDOW)
        await turns(agent, "how does the parser work?", "and the body?")
        n = agent.cache_watch.requests
        await agent.aclose()
        resumed = fake_agent(ws, fake.base_url, context_window=WINDOW, continue_=True, model="claude-haiku-4-5")
        [miss] = of(await turns(resumed, "go on"), ev.CacheMiss)
        await resumed.aclose()
        same = fake_agent(ws, fake.base_url, context_window=WINDOW, continue_=True, model="claude-haiku-4-5")
        events = await turns(same, "and on")        # same model, within the TTL, the prefix extended
        await same.aclose()
    assert (miss.where, miss.why, miss.request, miss.model) == (None, "model switch", n + 1, "claude-haiku-4-5")
    assert of(events, ev.CacheMiss) == []


TOOLS = [{"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}}]
MESSAGES = [{"role": "user", "content": [{"type": "text", "text": f"message {i} " * 400}]} for i in range(6)]


def test_the_loop_digests_only_new_messages_and_gets_the_same_shape(monkeypatch):
    calls = []
    real = cache_watch.digest
    monkeypatch.setattr(cache_watch, "digest", lambda obj: calls.append(obj) or real(obj))
    w = cache_watch.CacheWatch()
    history = list(MESSAGES)
    w.sending(model="m", at=0, ttl="5m", tools=TOOLS, system="s", messages=history, head_tokens=(1, 1))
    first = len(calls)
    w.answered({"cache_read_input_tokens": 0, "cache_creation_input_tokens": 9_000})
    history.append({"role": "user", "content": "one more"})
    calls.clear()
    w.sending(model="m", at=1, ttl="5m", tools=TOOLS, system="s", messages=history, head_tokens=(1, 1))
    assert first == len(MESSAGES) and len(calls) == 1            # only the new message
    fresh = shape_of(model="m", at=1, ttl="5m", tools=TOOLS, system="s", messages=history,
                     sizes=w.pending.sizes, head_tokens=(1, 1), compacted=False)
    assert w.pending == fresh
    history[0] = {"role": "user", "content": "rewritten"}               # a new object: digested again
    w.sending(model="m", at=2, ttl="5m", tools=TOOLS, system="s", messages=history, head_tokens=(1, 1))
    assert w.pending.messages[0] == digest(history[0])
