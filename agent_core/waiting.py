"""`/wait`'s words, apart from the demo that implements it: the real loop and the TUI name a pause
and its error without importing the demo model; the demo installs the clock move itself
(`Agent.time_travel`, set by the factory only when the model is the offline demo)."""
from __future__ import annotations

from dataclasses import dataclass


class PauseError(ValueError):
    """A /wait that cannot run; the message says what to do instead."""


@dataclass(frozen=True)
class Pause:
    seconds: float            # how much time passed
    ttl_s: float              # how long the cache lives after a request
    since_request_s: float | None   # since the last model answer, after the pause (None: no answer yet)

    @property
    def cold(self) -> bool:
        return self.since_request_s is None or self.since_request_s > self.ttl_s


def real_model_error(ttl: str) -> PauseError:
    """What /wait says on a real model, where time passes by itself."""
    return PauseError(f"/wait moves only the demo model's clock. With a real model, time passes by itself: "
                      f"the prompt cache expires {ttl} after the last request.")


def _span(seconds: float) -> str:
    seconds = round(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v) or "0s"


def describe(p: Pause) -> str:
    """What the user is told: the time that passed and what it means for the cache and the engine."""
    head = f"{_span(p.seconds)} pass on the demo's clock."
    if p.since_request_s is None:
        return head + " No request has been made yet, so there is no cache to expire."
    if p.cold:
        return (f"{head} The last request was {_span(p.since_request_s)} ago, past the cache's "
                f"{_span(p.ttl_s)}: the prompt cache has expired. The next request writes it anew, so "
                "rewriting old context costs nothing extra now, and the engine may clear old tool results, "
                "collapse old spans or compact into its notes before sending it.")
    left = p.ttl_s - p.since_request_s
    return (f"{head} The last request was {_span(p.since_request_s)} ago: the prompt cache is still warm "
            f"for {_span(left)} more. /wait {_span(left + 60)} lets it expire.")
