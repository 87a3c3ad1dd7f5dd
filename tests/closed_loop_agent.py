"""A closed-loop measure of what compaction costs in work, not just in tokens (issue 25).

Replay and token counts cannot see re-work: an agent that lost a file's content reads it again,
and that round trip is the price of a compaction that removed what was needed. Here the real
`Agent` (the loop, the engine, the read tool, the real SDK) runs against the loopback fake server,
and a scripted model answers every request from what the request itself holds:

- a workspace of N files of 5–20 KB, each opening with one unique fact
  (`FACT: the code of file_07 is K7Q2-19`);
- a plan of user prompts: "read file X" (the model calls `read_file`, then answers briefly, without
  repeating the fact) and, interleaved, "what is the fact of file X?" for a file read 2–12 prompts
  earlier;
- on a question the model looks at the request it was sent: the fact there verbatim (tool results,
  summaries, digests, notes, anything) is an answer from the context; otherwise it reads the file
  again (a re-read) and answers from the result, or says the fact is lost when the result does not
  hold it (or the question never reached the model);
- a summary request (the engine's summarizer) gets a summary like a real model's: the user prompts
  and the file paths, not the file contents (`SummaryStyle`).

`run_session` returns the figures (`Figures`): requests, re-reads, answers from the context, facts
lost, user prompts still verbatim in the last request, and the session's dollars as the loop's own
cost book priced the usage each response reported (the fake server's prefix-cache model).
No network, no real key: the key is a fake one the fake server accepts.
"""
from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from agent_core import events as ev
from agent_core.config import load_config
from agent_core.loop.factory import build_agent
from compaction import project, validate_history
from compaction.entry import Entry
from tests.fake_anthropic import FakeAnthropic, is_summary_request, reply, tool_use

MODEL = "claude-sonnet-4-6"
FAKE_KEY = "sk-ant-closed-loop-not-a-real-key-000"
READ_TOOL = "read_file"        # agent_core/tools/read_file.py

# The variants a run can be asked for, as config overrides for load_config (the CLI's keys).
# The named presets are compaction/presets.py's (`policy`); the others are the engine's switches.
VARIANTS: dict[str, dict[str, Any]] = {
    "ctxtui": {},                                   # the default engine
    "no-autocompact": {"disable_autocompact": True},   # the fallback layers only (snip, no summary)
    "cc": {"policy": "cc"},
    "summary": {"policy": "summary"},
    "none": {"policy": "none"},                     # nothing compacts
}

_WORDS = ("alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda", "theta", "zeta",
          "buffer", "cache", "queue", "index", "ledger", "parser", "socket", "thread", "vector", "window")


# ------------------------------------------------------------------ the workspace

@dataclass(frozen=True)
class FileFact:
    path: str       # relative to the workspace
    code: str
    size: int       # bytes written

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[0]

    @property
    def fact(self) -> str:
        """The sentence an answer needs, verbatim (the file's first line without `FACT: `)."""
        return f"the code of {self.name} is {self.code}"


def _code(rng: random.Random) -> str:
    alnum = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    return "".join(rng.choice(alnum) for _ in range(4)) + f"-{rng.randrange(10, 100)}"


def filler(rng: random.Random, name: str, target: int) -> list[str]:
    """Note lines of `name` adding up to at least `target` bytes (newlines counted); no fact, no code."""
    lines: list[str] = []
    size = 0
    while size < target:
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(6, 12)))
        line = f"{name} note {len(lines) + 1:04d}: {words} {rng.randrange(1000)}"
        lines.append(line)
        size += len(line) + 1
    return lines


def build_workspace(ws: Path, n_files: int = 24, seed: int = 0, min_kb: float = 5, max_kb: float = 20
                    ) -> list[FileFact]:
    """`n_files` files `file_NN.txt` in `ws`, deterministic from `seed`, each `min_kb`–`max_kb` KB of
    filler lines after its fact line. The filler holds no fact and no code, so a fact found in a
    request came from that file's own first line (or from something that quoted it)."""
    rng = random.Random(f"closed-loop-files-{seed}")
    ws.mkdir(parents=True, exist_ok=True)
    facts: list[FileFact] = []
    codes: set[str] = set()
    for i in range(n_files):
        code = _code(rng)
        while code in codes:
            code = _code(rng)
        codes.add(code)
        name = f"file_{i:02d}"
        target = int(rng.uniform(min_kb, max_kb) * 1024)
        first = f"FACT: the code of {name} is {code}"
        lines = [first, *filler(rng, name, target - len(first) - 1)]
        text = "\n".join(lines) + "\n"
        (ws / f"{name}.txt").write_text(text, encoding="utf-8")
        facts.append(FileFact(f"{name}.txt", code, len(text.encode())))
    return facts


# ------------------------------------------------------------------ the prompts

@dataclass(frozen=True)
class Step:
    kind: str            # "read" | "ask"
    file: FileFact
    prompt: str
    gap: int = 0         # ask: prompts since that file was read


def read_prompt(f: FileFact) -> str:
    return f"Read {f.path} and tell me in one line what kind of notes it holds."


def ask_prompt(f: FileFact) -> str:
    return f"What is the fact of {f.path}? Answer with its code."


def plan_prompts(files: list[FileFact], questions: int = 16, seed: int = 0, min_gap: int = 2, max_gap: int = 12
                 ) -> list[Step]:
    """Every file read once (in an order from `seed`), and `questions` questions interleaved, each
    about a different file read `min_gap`–`max_gap` prompts earlier. Deterministic from `seed`;
    raises ValueError when the numbers leave no such plan."""
    if questions > len(files):
        raise ValueError(f"{questions} questions need at least as many files (got {len(files)})")
    rng = random.Random(f"closed-loop-plan-{seed}")
    order = list(files)
    rng.shuffle(order)
    steps: list[Step] = []
    read_at: dict[str, int] = {}
    asked: set[str] = set()
    reads_left, asks_left = list(order), questions

    def candidates() -> list[FileFact]:
        here = len(steps)
        return [f for f in order if f.path in read_at and f.path not in asked
                and min_gap <= here - read_at[f.path] <= max_gap]

    while reads_left or asks_left:
        can = candidates() if asks_left else []
        # ask with the odds that spread the questions over what is left, and whenever reads ran out
        if can and (not reads_left or rng.random() < asks_left / (asks_left + len(reads_left))):
            f = rng.choice(can)
            steps.append(Step("ask", f, ask_prompt(f), len(steps) - read_at[f.path]))
            asked.add(f.path)
            asks_left -= 1
        elif reads_left:
            f = reads_left.pop(0)
            read_at[f.path] = len(steps)
            steps.append(Step("read", f, read_prompt(f)))
        else:
            raise ValueError(f"no plan: {asks_left} questions left with no file read {min_gap}–{max_gap} "
                             f"prompts earlier")
    return steps


# ------------------------------------------------------------------ what a request holds

def _strings(obj: Any) -> Iterable[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def request_text(body: Mapping[str, Any]) -> str:
    """Everything the model would read in a request, tools aside: the system prompt and every
    message's strings (text, tool results, tool inputs, summaries, digests, compaction blocks)."""
    return "\n".join(_strings([body.get("system"), body.get("messages")]))


def _results(message: Mapping[str, Any]) -> list[dict]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] \
        if isinstance(content, list) else []


# ------------------------------------------------------------------ the model

@dataclass(frozen=True)
class SummaryStyle:
    """What the scripted summarizer keeps. A real model's summary, following the engine's prompt,
    keeps the user's messages and the files it touched but not their contents; `facts=True` is a
    summary that also copies every fact it can see (an upper bound on what a summary can keep)."""
    prompts: bool = True
    paths: bool = True
    facts: bool = False


@dataclass
class Outcome:
    question: int        # the step's index in the plan
    path: str
    gap: int
    how: str = "lost"    # "context" | "reread" | "lost"


class ScriptedModel:
    """The fake server's responder: plays the model over the plan. The runner sets `step` before
    each prompt; answers are decided from the request body alone, as a model would."""

    def __init__(self, steps: list[Step], summary: SummaryStyle = SummaryStyle()) -> None:
        self.steps = steps
        self.summary_style = summary
        self.step: int | None = None
        self.outcomes: dict[int, Outcome] = {}
        self.summaries = 0
        self.rereads = 0          # re-read calls issued (a re-read that found nothing counts as lost)
        self.pages = 0            # calls that read on where a truncated read said to

    def read(self, body: dict, path: str, offset: int | None = None) -> dict:
        """The read tool call for `path` (from line `offset`, as a truncated read says to go on)."""
        self.pages += bool(offset)
        return tool_use(READ_TOOL, {"path": path, **({"offset": offset} if offset else {})})

    def __call__(self, body: dict) -> dict:
        if is_summary_request(body):
            self.summaries += 1
            return self.summary(body)
        if self.step is None:
            return reply("ok")
        i, s = self.step, self.steps[self.step]
        newest = body["messages"][-1]
        results = _results(newest)
        more = next_offset(newest) if results else None
        if s.kind == "read":
            if more:            # a read cut short: a model reads on as the tool says
                return reply("Reading on.", self.read(body, s.file.path, more))
            if results:
                return reply(f"{s.file.path} holds numbered notes on buffers and caches.")
            return reply(f"Reading {s.file.path}.", self.read(body, s.file.path))
        if results:       # the re-read's result
            o = self.outcomes.setdefault(i, Outcome(i, s.file.path, s.gap))
            if s.file.fact in request_text({"messages": [newest]}):
                o.how = "reread"
                return reply(f"From {s.file.path}: {s.file.fact}.")
            if more:
                return reply("Reading on.", self.read(body, s.file.path, more))
            o.how = "lost"
            return reply(f"lost: I cannot find the fact of {s.file.path}.")
        if i in self.outcomes:          # the same question sent again (a retry): decide as before
            o = self.outcomes[i]
        else:
            o = self.outcomes[i] = Outcome(i, s.file.path, s.gap,
                                           "context" if s.file.fact in request_text(body) else "lost")
            if o.how == "lost":
                self.rereads += 1
        if o.how == "context":
            return reply(f"As read earlier: {s.file.fact}.")
        return reply(f"I no longer see {s.file.path}; reading it again.", self.read(body, s.file.path))

    def summary(self, body: dict) -> dict:
        """A nine-section summary inside <summary> tags, keeping what `summary_style` says."""
        seen = request_text(body)
        st = self.summary_style
        prompts = [s.prompt for s in self.steps if st.prompts and s.prompt in seen]
        paths = sorted({s.file.path for s in self.steps if st.paths and s.file.path in seen})
        facts = sorted({s.file.fact for s in self.steps if st.facts and s.file.fact in seen})
        return summary_reply(paths, prompts, facts)


def summary_reply(paths: Sequence[str], prompts: Sequence[str], facts: Sequence[str] = ()) -> dict:
    """The scripted summarizer's nine sections: the files by path (no content), the user's prompts,
    and `facts` when a style keeps them."""
    files = "\n".join(f"   - {p}: read (numbered notes; contents not kept here)" for p in paths)
    users = "\n".join(f"   - {p}" for p in prompts)
    known = "\n".join(f"   - {f}" for f in facts)
    return reply("<analysis>The user has me read files one by one and asks about them later.</analysis>\n"
                 "<summary>\n"
                 "1. Primary Request and Intent: read the workspace's files and answer questions about them.\n"
                 "2. Key Technical Concepts: numbered note files.\n"
                 f"3. Files and Code Sections:\n{files or '   (none)'}\n"
                 "4. Errors and fixes: none.\n"
                 f"5. Problem Solving: {'facts seen:' if facts else 'none.'}\n{known}\n"
                 f"6. All user messages:\n{users or '   (not kept)'}\n"
                 "7. Pending Tasks: answer the next question.\n"
                 "8. Current Work: reading files.\n"
                 "9. Optional Next Step: wait for the user.\n"
                 "</summary>")


_NEXT = re.compile(r"next offset=(\d+)")


def next_offset(message: Mapping[str, Any]) -> int | None:
    """Where a truncated read says to go on (`next offset=N`), if the newest result says so."""
    found = _NEXT.findall(request_text({"messages": [message]}))
    return int(found[-1]) if found else None


# ------------------------------------------------------------------ a run

@dataclass
class Figures:
    """One run's figures. `answered + rereads + lost == questions` always."""
    variant: str
    window: int
    questions: int
    answered: int                 # from the context
    rereads: int                  # answered after reading the file again
    lost: int                     # not answered: the re-read found nothing, or the turn never reached the model
    requests: int                 # POST /v1/messages the server answered (summaries included)
    refused: int                  # POST /v1/messages the server refused (too long for the window)
    summaries: int
    prompts: int
    prompts_kept: int             # user prompts verbatim in the last main request
    dollars: float                # the loop's own cost book (agent.cost.total_usd)
    calls_booked: int             # model calls in that cost book
    errors: int                   # turns that said an error (a failed compaction, a blocked or refused request)
    pages: int                    # reads that went on where a truncated one said to (small windows cut reads)
    seconds: float
    compactions: dict[str, int] = field(default_factory=dict)     # layer -> times it acted
    error_kinds: dict[str, int] = field(default_factory=dict)     # Error.kind -> times said


@dataclass
class Run:
    figures: Figures
    entries: list[Entry]          # the agent's history at the end
    usages: list[dict]            # every answered response's reported usage, in order
    bodies: list[dict]            # every request body the server received
    outcomes: list[Outcome]
    steps: list[Step]
    model: str = MODEL


def _environ(root: Path, base_url: str) -> dict[str, str]:
    """A hermetic environment: the fake key and URL, state and config folders under `root`."""
    return {"ANTHROPIC_API_KEY": FAKE_KEY, "ANTHROPIC_BASE_URL": base_url,
            "CTXTUI_HOME": str(root / "state" / "ctxtui"), "XDG_STATE_HOME": str(root / "state"),
            "XDG_CONFIG_HOME": str(root / "config"), "HOME": str(root / "home")}


async def run_session(root: Path, *, window: int, settings: Mapping[str, Any] | None = None, variant: str = "",
                      files: int = 24, questions: int = 16, seed: int = 0, summary: SummaryStyle = SummaryStyle(),
                      min_gap: int = 2, max_gap: int = 12) -> Run:
    """One closed-loop session in a fresh workspace under `root`: the real agent built from
    `load_config({model, context_window: window, **settings})`, every prompt of the plan a turn."""
    started = time.perf_counter()
    ws = root / "ws"
    facts = build_workspace(ws, files, seed)
    steps = plan_prompts(facts, questions, seed, min_gap, max_gap)
    model = ScriptedModel(steps, summary)
    layers: dict[str, int] = {}
    kinds: dict[str, int] = {}
    errors = 0
    with FakeAnthropic(responder=model, context_window=window) as fake:
        config = load_config({"model": MODEL, "context_window": window, **dict(settings or {})},
                             environ=_environ(root, fake.base_url), workspace=ws)
        agent = build_agent(config, interactive=False)
        try:
            for i, s in enumerate(steps):
                model.step = i
                failed = False
                async for e in agent.run(s.prompt):
                    if isinstance(e, ev.Compaction):
                        layers[e.layer] = layers.get(e.layer, 0) + 1
                    elif isinstance(e, ev.Error):
                        failed = True
                        kinds[e.kind] = kinds.get(e.kind, 0) + 1
                errors += failed
                model.step = None
        finally:
            await agent.aclose()
        records = [r for r in fake.requests if r.path == "/v1/messages"]
        dollars, booked = agent.cost.total_usd, agent.cost.calls()
        entries = list(agent.entries)
    answered = [r for r in records if r.status == 200 and r.usage is not None]
    main = [r.body for r in answered if not is_summary_request(r.body)]
    last = request_text(main[-1]) if main else ""
    outcomes = [model.outcomes.get(i) or Outcome(i, s.file.path, s.gap, "lost")
                for i, s in enumerate(steps) if s.kind == "ask"]
    count = {how: sum(o.how == how for o in outcomes) for how in ("context", "reread", "lost")}
    figures = Figures(variant=variant or ",".join(f"{k}={v}" for k, v in (settings or {}).items()) or "default",
                      window=window, questions=len(outcomes), answered=count["context"], rereads=count["reread"],
                      lost=count["lost"], requests=len(answered), refused=sum(r.status != 200 for r in records),
                      summaries=model.summaries, prompts=len(steps), prompts_kept=sum(s.prompt in last for s in steps),
                      dollars=float(dollars) if dollars is not None else float("nan"), calls_booked=booked,
                      errors=errors, pages=model.pages, seconds=time.perf_counter() - started, compactions=layers,
                      error_kinds=kinds)
    return Run(figures, entries, [r.usage for r in answered if r.usage is not None], [r.body for r in records],
               outcomes, steps)


def history_problems(run: Run) -> list[str]:
    """What `compaction.validate_history` finds wrong with the run's final history (nothing, if sound)."""
    return [str(p) for p in validate_history(project(run.entries))]
