"""Label encoding and event decoding of clinex.pv.decode."""

from __future__ import annotations

import pytest

from clinex.pv.decode import decode, encode, label_runs
from clinex.pv.features import tokenize
from clinex.pv.types import Argument, Attribute, Event, SentenceEvents
from clinex.text import Span

TEXT = "A 54-year-old man developed severe rash after amoxicillin and clavulanate."


def _arg(role: str, start: int, end: int) -> Argument:
    return Argument(role=role, span=Span.from_offsets(TEXT, (start, end)))


def _gold() -> SentenceEvents:
    ev = Event(
        event_type="Adverse_event",
        trigger=Span.from_offsets(TEXT, (18, 27)),  # developed
        arguments=(_arg("Subject", 0, 17), _arg("Treatment", 45, 73), _arg("Effect", 28, 39)),
        sub_arguments={
            "Subject": (_arg("Age", 2, 13), _arg("Gender", 14, 17)),
            "Treatment": (_arg("Drug", 45, 56), _arg("Drug", 61, 73)),
        },
        attributes=(Attribute(name="Severity", value="High", cue=Span.from_offsets(TEXT, (28, 34))),),
    )
    return SentenceEvents(id="s1", text=TEXT, events=(ev,))


def test_encode_combined_labels() -> None:
    toks = tokenize(TEXT)
    words = [TEXT[s:e] for s, e in toks]
    labels = encode(_gold(), toks)
    got = dict(zip(words, labels["args"]))
    assert got["A"] == "Subject|O"
    assert got["54"] == "Subject|Subject.Age"
    assert got["man"] == "Subject|Subject.Gender"
    assert got["developed"] == "Adverse_event|O"
    assert got["rash"] == "Effect|O"
    assert got["after"] == "O"
    assert got["amoxicillin"] == "Treatment|Treatment.Drug"
    assert got["and"] == "Treatment|O"
    assert dict(zip(words, labels["attr"]))["severe"] == "Severity.High"
    assert labels["attr"].count("O") == len(toks) - 1


def test_label_runs() -> None:
    assert label_runs(["O", "Effect", "Effect", "O", "Treatment"]) == [("Effect", 1, 3), ("Treatment", 4, 5)]
    assert label_runs(["A", "B", "B"]) == [("A", 0, 1), ("B", 1, 3)]
    assert label_runs([]) == []


def test_decode_inverts_encode() -> None:
    toks = tokenize(TEXT)
    labels = encode(_gold(), toks)
    (ev,) = decode(TEXT, toks, labels["args"], labels["attr"], source="test")
    assert ev.event_type == "Adverse_event"
    assert (ev.trigger.start, ev.trigger.end, ev.trigger.text) == (18, 27, "developed")
    assert [(a.role, a.span.text) for a in ev.arguments] == [
        ("Subject", "A 54-year-old man"),
        ("Treatment", "amoxicillin and clavulanate"),
        ("Effect", "severe rash"),
    ]
    assert [(a.role, a.span.start, a.span.end) for a in ev.sub_arguments["Subject"]] == [
        ("Age", 2, 13),
        ("Gender", 14, 17),
    ]
    assert [a.span.text for a in ev.sub_arguments["Treatment"]] == ["amoxicillin", "clavulanate"]
    # two drugs -> one Combination listing them
    assert [d.span.text for d in ev.combinations[0].drugs] == ["amoxicillin", "clavulanate"]
    (att,) = ev.attributes
    assert (att.name, att.value, att.cue.text) == ("Severity", "High", "severe")
    assert ev.source == "test"
    for frag in [ev.trigger.fragments[0], *(a.span.fragments[0] for a in ev.arguments)]:
        assert TEXT[frag.start : frag.end] == frag.text


def test_decode_attaches_to_nearest_trigger() -> None:
    text = "Rash after drugA ; fever following drugB ."
    toks = tokenize(text)
    lab = ["Effect|O", "Adverse_event|O", "Treatment|Treatment.Drug", "O",
           "Effect|O", "Adverse_event|O", "Treatment|Treatment.Drug", "O"]
    attr = ["O"] * 8
    attr[3] = "Speculated"  # ";" is as near to both triggers: ties go to the earlier one
    e1, e2 = decode(text, toks, lab, attr, combine_drugs=0)
    assert [a.span.text for a in e1.arguments] == ["drugA", "Rash"]
    assert [a.span.text for a in e2.arguments] == ["drugB", "fever"]
    assert e1.attribute("Speculated").cue.text == ";"
    assert e2.attributes == ()
    assert e1.combinations == () and e2.combinations == ()


def test_decode_shares_roles_on_request() -> None:
    text = "drugA caused rash and caused fever"
    toks = tokenize(text)
    lab = ["Treatment|Treatment.Drug", "Adverse_event|O", "Effect|O", "O", "Adverse_event|O", "Effect|O"]
    e1, e2 = decode(text, toks, lab)
    assert e2.main("Treatment") == ()
    e1, e2 = decode(text, toks, lab, share_roles=("Treatment",))
    assert e2.main("Treatment")[0].span.text == "drugA"
    assert e2.sub_arguments["Treatment"][0].span.text == "drugA"


def test_decode_without_trigger_gives_no_events() -> None:
    text = "rash with drugA"
    toks = tokenize(text)
    assert decode(text, toks, ["Effect|O", "O", "Treatment|O"]) == []
    assert decode("", [], []) == []


def test_decode_length_mismatch() -> None:
    with pytest.raises(ValueError, match="3 tokens"):
        decode("a b c", tokenize("a b c"), ["O", "O"])
