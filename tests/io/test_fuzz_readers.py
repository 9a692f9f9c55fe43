"""Every reader is total: a mutated input gives a result or a ``[CLXnnn]`` error naming
the file, never another exception, and within :func:`fuzz_harness.time_limit` (5 s + 1 s per MiB).

Property-based (hypothesis, derandomized: the same mutants on every run). The "ci"
profile runs 40 mutants per reader; ``CLINEX_FUZZ_PROFILE=long`` runs 2,000 (the
same as ``bench/fuzz.py``, which also reports counts, times and peak RSS).
Seeds are built here, so no corpus is needed.
"""

from __future__ import annotations

import importlib.util
import traceback

import pytest

pytest.importorskip("hypothesis")

from fuzz_harness import READERS, describe, mutants, mutate, profile, run_mutant  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SEEDS: dict[str, dict[str, bytes]] = {}


def _seed(name: str) -> dict[str, bytes]:
    reader = READERS[name]
    if reader.needs and importlib.util.find_spec(reader.needs) is None:
        pytest.skip(f"{reader.needs} is not installed")
    if name not in _SEEDS:
        _SEEDS[name] = reader.seed()
    return _SEEDS[name]


def _verdict(name: str, files: dict[str, bytes], what: str) -> None:
    out = run_mutant(READERS[name], files)
    if out.kind == "other":
        tb = "".join(traceback.format_exception(out.error)) if out.error else ""
        pytest.fail(f"{name}: {what}: {out.problem or 'not a clinex error'}\n{tb}")
    assert out.kind != "hang", f"{name}: {what}: took {out.seconds:.1f} s"


@pytest.mark.parametrize("name", sorted(READERS))
def test_seed_is_read(name: str) -> None:
    """The unmutated seed is valid input: the reader returns a result."""
    out = run_mutant(READERS[name], _seed(name))
    assert out.kind == "result", (out.kind, out.error)


@pytest.mark.parametrize("name", sorted(READERS))
@profile()
@given(data=st.data())
def test_mutant_gives_result_or_clinex_error(name: str, data: st.DataObject) -> None:
    seed = _seed(name)
    mutant = data.draw(mutants(seed, hostile=False), label="mutant")
    _verdict(name, mutate(seed, mutant), describe(mutant))


# the hostile sizes of issue 21, one fixed mutant each on readers where they are cheap;
# bench/fuzz.py draws them at random for every reader
@pytest.mark.parametrize(("name", "file", "op", "kind", "start"), [
    ("jsonl", "t.jsonl", ("bigint", 0, 5000), "result", None),  # line 1's id: skipped, others kept
    ("phee_json", "s.json", ("bigint", 4, 5000), "clinex",
     "[CLX002] {}/s.json:1: field 'annotations[0].events[0].Trigger.start[0][0]': integer of 5000 digits"),
    ("brat", "s1.ann", ("bigint", 2, 5000), "clinex", "[CLX004] {}/s1.ann:1: offset of 5000 digits"),
    ("tagtog", "d1.ann.json", ("bigint", 0, 5000), "result", None),
    ("tagtog", "d1.ann.json", ("bigint", 9, 5000), "clinex",
     "[CLX002] {}/d1.ann.json: field 'entities[0].offsets[0].start': integer of 5000 digits"),
    ("tagtog", "d1.plain.html", ("bigint", 9768, 4301), "result", None),  # page id s<4301 digits>v1
    ("jsonl", "t.jsonl", ("nest10k", 0, "["), "clinex", "[CLX002] {}/t.jsonl:1: JSON nested too deeply"),
    ("phee_json", "s.json", ("nest10k", 0, "{"), "clinex", "[CLX002] {}/s.json:1: JSON nested too deeply"),
    ("jsonl", "t.jsonl", ("token", 30, 1_000_000), "result", None),
    ("n2c2_xml", "001.xml", ("token", 200, 1_000_000), "result", None),
    ("notes_folder", "b.txt", ("repeat", 1, False), "result", None),
    ("n2c2_xml", "001.xml", ("repeat", 200, True), "result", None),
])
def test_hostile_sizes(name: str, file: str, op: tuple, kind: str, start: str | None) -> None:
    files = mutate(READERS[name].seed(), (file, [op]))
    out = run_mutant(READERS[name], files)
    assert out.kind == kind, (out.kind, out.error)
    if start is not None:
        assert str(out.error).startswith(start.format(out.error.path.rsplit("/", 1)[0])), str(out.error)[:300]


# --------------------------------------------------------------------------- found by fuzzing
# Each case is a mutant that gave a traceback before the reader was fixed.

def _deep_json(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def test_tagtog_deeply_nested_ann_json() -> None:
    files = READERS["tagtog"].seed()
    files["d1.ann.json"] = _deep_json(100_000)
    _verdict("tagtog", files, "ann.json nested 100,000 deep")


def test_tagtog_legend_deeply_nested() -> None:
    files = READERS["tagtog"].seed()
    files["annotations-legend.json"] = b"[" * 100_000 + b"]" * 100_000
    _verdict("tagtog", files, "legend nested 100,000 deep")


def test_tagtog_legend_with_byte_order_mark() -> None:
    # mutant annotations-legend.json: [('reencode', 'utf-8-sig')]: "Unexpected UTF-8 BOM"
    files = READERS["tagtog"].seed()
    files["annotations-legend.json"] = b"\xef\xbb\xbf" + files["annotations-legend.json"]
    files["d1.ann.json"] = b"\xef\xbb\xbf" + files["d1.ann.json"]
    out = run_mutant(READERS["tagtog"], files)
    assert out.kind == "result", out.error


@pytest.mark.parametrize("name,file", [("jats", "PMC1.nxml"), ("tagtog", "d1.plain.html"),
                                       ("n2c2_xml", "001.xml")])
def test_unknown_xml_encoding_is_an_encoding_error(name: str, file: str) -> None:
    # mutant PMC1.nxml: [('flip', 2290, 2)] turned encoding="UTF-8" into "QTF-8": LookupError
    files = READERS[name].seed()
    body = files[file].split(b"?>", 1)[-1] if files[file].startswith(b"<?xml") else files[file]
    files[file] = b'<?xml version="1.0" encoding="QTF-8"?>' + body.replace(b"</", b"\xe9</", 1)  # not UTF-8: expat decodes
    out = run_mutant(READERS[name], files)
    assert out.kind == "clinex", (out.kind, out.error)
    assert str(out.error).startswith("[CLX003] ") and "unknown encoding" in str(out.error)
    assert out.error.line == 1


def test_long_run_without_spaces_before_a_period_splits_fast() -> None:
    # mutant trial.txt: [('insert', 95948, b"[" * 20000 + b"]" * 20000) twice]: the
    # abbreviation check searched the whole text since the last boundary at each
    # period (quadratic): > 5 s; now linear.
    from fuzz_harness import _nesting, apply

    seed = READERS["plaintext"].seed()
    nest = _nesting(0, 20000)
    files = {"trial.txt": apply(seed["trial.txt"], [("insert", 95948, nest), ("insert", 95948, nest)])}
    out = run_mutant(READERS["plaintext"], files)
    assert out.kind == "result" and out.seconds < 4, (out.kind, out.seconds)  # > 5 s when quadratic


def test_abbreviation_check_unchanged_by_the_window() -> None:
    from clinex.text import split_sentences

    long = "Y" * 40 + "e.g."  # a 44-character word ending like an abbreviation
    text = f"See e.g. Smith. Then Dr. Who came. {long} Next one. A. B. Jones wrote."
    assert [s.text for s in split_sentences(text)] == [
        "See e.g. Smith.", "Then Dr. Who came.", long, "Next one.", "A. B. Jones wrote."]
