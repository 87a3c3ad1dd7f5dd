"""A worker's scan of a whole log (agent_core/logs/fact_scan.py) finds what `LogReader` finds reading
it once: the same facts at the same line numbers, the same line and corrupt counts and first corrupt
line, the same bytes read. Generated logs of every kind of line (records, blanks, CR endings, spaces
after a record, garbage, lines over the length cap, a cut-off last line) read in small chunks, so
lines fall across chunk edges."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings, strategies as st

from agent_core.logs.claude_code import extract
from agent_core.logs.fact_scan import scan_facts
from agent_core.logs.fast_decode import decoder
from agent_core.logs.prefetch import joined
from agent_core.logs.reader import LogReader, session_from_path
from agent_core.logs.records import CorruptRecord, Deduper, LogFollower
from tests.log_helpers import assistant, boundary, progress, usage, user


def by_reader(path, loads, chunk, max_line, final=True):
    reader = LogReader(path, dedup=Deduper(), loads=loads)
    reader.follower = LogFollower(path, chunk_size=chunk, max_line=max_line)
    items = []
    for lineno, obj in reader.objects(final=final, loads=loads):
        if reader.format != "claude_code":
            return ("other",)
        try:
            facts = extract(obj, session_from_path(path))
        except CorruptRecord:
            reader.stats.mark_corrupt(lineno)
            continue
        if facts is not None:
            items.append((lineno, facts))
    if reader.format not in ("claude_code", None):
        return ("other",)
    s = reader.stats
    return (reader.format, items, s.lines, s.corrupt, s.first_corrupt_line, reader.follower.line_offset, 0)


def _anonymous(result):
    """Keys of records with no ids are new on every read: one name for them."""
    if len(result) == 1:
        return result
    items = [(n, (f[0], "anon", *f[2:]) if isinstance(f[1], str) and f[1].startswith("uuid:#") else f)
             for n, f in result[1]]
    return (result[0], items, *result[2:])


def _json(rec):
    return json.dumps(rec, separators=(",", ":"))


LINES = st.one_of(
    st.builds(lambda i, o: _json(assistant(f"m{i}", f"r{i}", u=usage(inp=i, out=o))), st.integers(0, 30),
              st.integers(0, 99)),
    st.builds(lambda i: _json(assistant(f"m{i}", f"r{i}", u=usage(inp=5), block="tool_use")), st.integers(0, 30)),
    st.just(_json(user("hello " * 30))), st.just(_json(boundary(150_000))),
    st.just(_json(user("s", isCompactSummary=True))),
    st.just(_json(progress(assistant("sub", "rs", sidechain=True)))),
    st.just(_json(assistant("x", "y", u={"input_tokens": 10**15}))),         # corrupt: absurd
    st.just('{"type":"assistant","message":{"usage":{"input_tokens":NaN}},"requestId":"n"}'),
    st.just('{"type":"assistant","message":{"id":"q","usage":1}}   '), st.just('{"type":"user"}\r'),
    st.just(""), st.just("   "), st.just("not json"), st.just('{"cut'), st.just("[1,2]"), st.just("{}"),
    st.just('{"t":"x","seq":1}'),                                                   # a ctxtui-like line
    st.text(alphabet='{}" usagecompact:,', max_size=40),
    st.integers(150, 400).map(lambda n: '{"type":"user","x":"' + "z" * n + '"}'),  # over a small cap
    st.integers(117, 123).map(lambda n: '{"type":"user","x":"' + "z" * (n - 20) + '"}'),   # about the cap
    st.integers(117, 123).map(lambda n: '{"type":"user","usage":"' + "z" * (n - 24) + '"}'),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(LINES, max_size=25), st.booleans(), st.sampled_from([7, 64, 301, 1 << 20]),
       st.sampled_from([120, 1 << 20]), st.booleans(), st.booleans())
def test_a_scan_finds_what_the_reader_finds(tmp_path_factory, lines, ends_with_newline, chunk, max_line, fast, final):
    path = tmp_path_factory.mktemp("scan") / "s.jsonl"
    text = "\n".join(lines) + ("\n" if ends_with_newline and lines else "")
    path.write_text(text, encoding="utf-8")
    loads = decoder() if fast else None
    got = _anonymous(scan_facts(path, loads, chunk=chunk, max_line=max_line, final=final))
    want = _anonymous(by_reader(path, loads, chunk, max_line, final))
    assert got == want


def test_lines_about_the_length_cap_in_a_chunk_and_across_chunks(tmp_path):
    lines = [_json(assistant("m0", "r0"))]          # the first line: the format is Claude Code's
    for n in range(117, 124):
        lines += ['{"type":"user","usage":"' + "z" * (n - 26) + '"}', _json(assistant(f"m{n}", f"r{n}"))]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for chunk in (5, 50, 119, 120, 121, 1 << 20):
        got = _anonymous(scan_facts(path, None, chunk=chunk, max_line=120))
        assert got == _anonymous(by_reader(path, None, chunk, 120)), chunk
        assert got[3] == 3 + 8       # 121, 122 and 123 bytes, and the records (longer): over the cap


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(LINES, min_size=1, max_size=25), st.booleans(), st.sampled_from([7, 64, 1 << 20]),
       st.sampled_from([120, 1 << 20]), st.booleans(), st.data())
def test_a_log_scanned_in_two_parts_joins_to_one_scan(tmp_path_factory, lines, ends_with_newline, chunk, max_line,
                                                     final, data):
    """`prefetch.split_scan`'s parts: the bytes before a line's start and from it (the second scanned
    with the format the first showed), joined, give what one scan gives; or None when the first
    part did not show the format."""
    path = tmp_path_factory.mktemp("parts") / "s.jsonl"
    text = "\n".join(lines) + ("\n" if ends_with_newline else "")
    path.write_bytes(text.encode("utf-8"))
    raw = path.read_bytes()
    starts = [i + 1 for i, b in enumerate(raw) if b == 0x0A and i + 1 < len(raw)]
    if not starts:
        return
    split = data.draw(st.sampled_from(starts))
    first = scan_facts(path, None, chunk=chunk, max_line=max_line, stop=split)
    second = scan_facts(path, None, chunk=chunk, max_line=max_line, final=final, start=split, fmt="claude_code")
    whole = scan_facts(path, None, chunk=chunk, max_line=max_line, final=final)
    got = joined(first, second)
    if first[0] == "claude_code":
        assert _anonymous(got) == _anonymous(whole)
    else:
        assert got is None
