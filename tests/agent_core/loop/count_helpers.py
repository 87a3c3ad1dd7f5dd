"""Measuring ctxtui's count of each request against what a server that counts differently says
(issue 24): a strict fake server (characters / 3.5) and a log of every main request's two counts,
with the compaction layers that acted since the request before it."""
from __future__ import annotations

from dataclasses import dataclass, field

from tests.fake_anthropic import FakeAnthropic, count_input
from tests.fake_anthropic.usage import chars_tokenizer

STRICT = chars_tokenizer(3.5)


def strict_server(script=(), **kw) -> FakeAnthropic:
    return FakeAnthropic(script, tokenizer=STRICT, **kw)


@dataclass
class Sent:
    ours: int                 # ctxtui's count of the request when it was sent
    server: int               # the server's count of the same request
    layers: list[str]         # compaction layers that acted since the previous main request
    first: bool = False       # the session's first request
    max_tokens: int = 0
    ratio: float | None = None  # the calibration the count used

    @property
    def error(self) -> float:
        return (self.ours - self.server) / self.server


@dataclass
class CountLog:
    sent: list[Sent] = field(default_factory=list)

    def after(self, layer: str) -> list[Sent]:
        return [s for s in self.sent if layer in s.layers]

    def table(self) -> str:
        return "\n".join(f"{'first' if s.first else ','.join(s.layers) or '-':<40} ours {s.ours:>7,} server "
                         f"{s.server:>7,} {s.error:+.1%} ratio {s.ratio}" for s in self.sent)


def count_log(agent, fake: FakeAnthropic) -> CountLog:
    """Wrap the agent's client so every main request is logged with ctxtui's count of it (the
    count its thresholds and max_tokens used) and the server's count of the body it received."""
    log = CountLog()
    stream = agent.client.stream
    seen = {"compactions": len(agent.compactions)}

    async def logged(**kw):
        if kw.get("purpose") != "main":
            async for item in stream(**kw):
                yield item
            return
        n = len(fake.requests)
        layers = [c.layer for c in agent.compactions[seen["compactions"]:]]
        seen["compactions"] = len(agent.compactions)
        ours, ratio = agent.parts.last.tokens, agent.pipeline.config.calibration
        try:
            async for item in stream(**kw):
                yield item
        finally:
            recs = [r for r in fake.requests[n:] if r.path == "/v1/messages"]
            if recs:
                body = recs[0].body
                server = count_input({k: body.get(k) for k in ("tools", "system", "messages")}, fake.tokenizer)
                log.sent.append(Sent(ours, server, layers, first=not log.sent, max_tokens=kw.get("max_tokens", 0),
                                     ratio=ratio))

    agent.client.stream = logged
    return log
