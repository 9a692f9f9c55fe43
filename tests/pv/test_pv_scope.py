"""Attribute scope (clinex.pv.scope): cues decide Negated/Speculated/Severity only where they govern the event."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from clinex.errors import FormatError, InputError, OffsetError
from clinex.pv.scope import (
    AttributeRules,
    apply_attribute_scope,
    apply_attribute_scope_batch,
    default_rules_path,
    load_attribute_rules,
)
from clinex.pv.types import Argument, Attribute, Event
from clinex.text import Span


def _at(text: str, s: str, n: int = 0) -> tuple[int, int]:
    """Offsets of the ``n``-th occurrence of ``s`` in ``text``."""
    i = -1
    for _ in range(n + 1):
        i = text.index(s, i + 1)
    return i, i + len(s)


def _event(
    text: str,
    trigger: str | tuple[int, int],
    effect: str | tuple[int, int] | None = None,
    attrs: tuple[tuple[str, object, str], ...] = (),
    event_type: str = "Adverse_event",
) -> Event:
    """An event built by hand; strings are located in ``text`` (first occurrence)."""

    def span(x: str | tuple[int, int]) -> Span:
        return Span.from_offsets(text, x if isinstance(x, tuple) else _at(text, x))

    return Event(
        event_type=event_type,
        trigger=span(trigger),
        arguments=(Argument(role="Effect", span=span(effect)),) if effect is not None else (),
        attributes=tuple(Attribute(name=n, value=v, cue=span(c)) for n, v, c in attrs),
    )


def _attrs(text: str, events: list[Event]) -> list[list[tuple[str, object, str, int, int, str | None]]]:
    """What the scope layer decides, as (name, value, cue text, start, end, source) per event."""
    out = apply_attribute_scope(text, events)
    result = []
    for ev in out:
        rows = []
        for a in ev.attributes:
            assert a.cue is not None
            assert text[a.cue.start : a.cue.end] == a.cue.text
            rows.append((a.name, a.value, a.cue.text, a.cue.start, a.cue.end, a.source))
        result.append(rows)
    return result


# --------------------------------------------------------------------------- negation


def test_did_not_develop_is_negated_by_not() -> None:
    t = "The patient did not develop neutropenia while on clozapine."
    assert _attrs(t, [_event(t, "develop", "neutropenia")]) == [
        [("Negated", True, "not", 16, 19, "rule:neg.not")]
    ]


def test_no_before_the_effect_is_the_cue() -> None:
    t = "No hepatotoxicity was observed during six months of isoniazid therapy."
    assert _attrs(t, [_event(t, "observed", "hepatotoxicity")]) == [
        [("Negated", True, "No", 0, 2, "rule:neg.no")]
    ]


def test_negation_ended_by_but_does_not_reach_the_event() -> None:
    t = "She had no fever but developed a rash after amoxicillin."
    # The model's cue "no" governs "fever", not the rash event: it is dropped.
    ev = _event(t, "developed", "a rash", attrs=(("Negated", True, "no"),))
    assert _attrs(t, [ev]) == [[]]
    assert _attrs(t, [_event(t, "developed", "a rash")]) == [[]]


def test_pseudo_negation_not_only() -> None:
    t = "Clozapine not only caused neutropenia but also hepatitis."
    ev = _event(t, "caused", "neutropenia", attrs=(("Negated", True, "not"),))
    assert _attrs(t, [ev]) == [[]]


def test_pseudo_negation_no_history_of() -> None:
    t = "A man with no history of liver disease developed hepatitis after isoniazid."
    assert _attrs(t, [_event(t, "developed", "hepatitis")]) == [[]]


def test_negation_governs_only_the_event_after_it() -> None:
    t = "Isoniazid caused hepatitis, but rifampicin did not cause a rash."
    events = [_event(t, "caused", "hepatitis"), _event(t, "cause", "a rash")]
    assert _attrs(t, events) == [[], [("Negated", True, "not", 47, 50, "rule:neg.not")]]


def test_not_been_reported_negates_the_event_before_it() -> None:
    t = "Renal injury due to anastrozole has not been seen in our clinic."
    assert _attrs(t, [_event(t, "due", "Renal injury")]) == [
        [("Negated", True, "not", 36, 39, "rule:neg.not_been")]
    ]
    # "... has not been published in the (English) literature" is a case report's novelty
    # statement: the event stays asserted (pseudo.not_reported_in_literature, issue 23)
    t = "Renal injury due to anastrozole has not been published in the English literature."
    assert _attrs(t, [_event(t, "due", "Renal injury")]) == [[]]


# --------------------------------------------------------------------------- hedges


@pytest.mark.parametrize(
    ("text", "trigger", "effect", "cue", "rule"),
    [
        ("The rash may have been induced by amoxicillin.", "induced", "The rash", (9, 12), "spec.may"),
        ("A possible case of lamotrigine-induced hepatitis is reported.", "induced", "hepatitis", (2, 10), "spec.possible"),
        ("Suspected isoniazid-induced hepatotoxicity in a child.", "induced", "hepatotoxicity", (0, 9), "spec.suspected"),
        ("The hepatitis was probably caused by isoniazid.", "caused", "The hepatitis", (18, 26), "spec.probably"),
    ],
)
def test_hedges(text: str, trigger: str, effect: str, cue: tuple[int, int], rule: str) -> None:
    assert _attrs(text, [_event(text, trigger, effect)]) == [
        [("Speculated", True, text[cue[0] : cue[1]], cue[0], cue[1], f"rule:{rule}")]
    ]


def test_most_likely_is_one_cue() -> None:
    # PHEE annotates "most likely" as the cue (2 of 3 in train), plain "likely" alone.
    t = "The hepatitis was most likely caused by isoniazid."
    assert _attrs(t, [_event(t, "caused", "The hepatitis")]) == [[("Speculated", True, "most likely", 18, 29, "rule:spec.likely")]]
    t = "The hepatitis was likely caused by isoniazid."
    assert _attrs(t, [_event(t, "caused", "The hepatitis")]) == [[("Speculated", True, "likely", 18, 24, "rule:spec.likely")]]


def test_hedge_scope_ended_by_a_terminator() -> None:
    # Two events, so the model's cue must pass the scope test (no sole-event trust).
    t = "It may be safe but caused hepatitis in our patient and a rash in another."
    events = [_event(t, "caused", "hepatitis", attrs=(("Speculated", True, "may"),)), _event(t, "caused", "a rash")]
    assert _attrs(t, events) == [[], []]
    # The sentence's only event keeps the model's hedge (model_trust trust.sole_event.speculated).
    t = "It may be safe but caused hepatitis in our patient."
    ev = _event(t, "caused", "hepatitis", attrs=(("Speculated", True, "may"),))
    assert _attrs(t, [ev]) == [[("Speculated", True, "may", 3, 6, "model")]]


def test_hedge_ended_by_semicolon_governs_one_of_two_events() -> None:
    t = "Isoniazid may cause hepatitis; rifampicin caused a rash."
    events = [_event(t, "cause", "hepatitis"), _event(t, "caused", "a rash")]
    assert _attrs(t, events) == [[("Speculated", True, "may", 10, 13, "rule:spec.may")], []]


def test_model_cue_that_governs_is_kept_with_source_model() -> None:
    t = "The rash may have been induced by amoxicillin."
    ev = _event(t, "induced", "The rash", attrs=(("Speculated", True, "may"),))
    # No duplicate from the rule that matches the same word.
    assert _attrs(t, [ev]) == [[("Speculated", True, "may", 9, 12, "model")]]


def test_model_cue_no_rule_knows_is_kept_in_the_same_clause() -> None:
    t = "To our knowledge, this is the first report of hepatitis induced by isoniazid."
    ev = _event(t, "induced", "hepatitis", attrs=(("Speculated", True, "To our knowledge"),))
    assert _attrs(t, [ev]) == [[("Speculated", True, "To our knowledge", 0, 16, "model")]]


def test_one_model_cue_per_attribute() -> None:
    t = "The hepatitis was most likely caused by isoniazid."
    ev = _event(t, "caused", "The hepatitis", attrs=(("Speculated", True, "most likely"), ("Speculated", True, "likely")))
    out = _attrs(t, [ev])
    assert len(out[0]) == 1 and out[0][0][0] == "Speculated" and out[0][0][5] == "model"


def test_model_cue_inside_the_effect_is_dropped() -> None:
    t = "She developed myositis, synovitis, and possible vasculitis after tretinoin."
    ev = _event(t, "developed", "myositis, synovitis, and possible vasculitis", attrs=(("Speculated", True, "possible"),))
    assert _attrs(t, [ev]) == [[]]


def test_model_hedge_of_the_sentences_only_event_is_kept_beyond_the_scopes() -> None:
    # "but" ends every scope, yet the sentence has no other event the hedge could be about
    # (model_trust "trust.sole_event.speculated").
    t = "Seizures associated with amphotericin B are rare, but physicians should be aware of the potential."
    ev = _event(t, "associated", "Seizures", attrs=(("Speculated", True, "potential"),))
    assert _attrs(t, [ev]) == [[("Speculated", True, "potential", 88, 97, "model")]]
    # With a second event in the sentence the scope test decides again: dropped.
    t = "Seizures associated with amphotericin B are rare, but rashes caused by it may be seen; physicians should be aware of the potential."
    events = [_event(t, "associated", "Seizures", attrs=(("Speculated", True, "potential"),)), _event(t, "caused", "rashes")]
    assert _attrs(t, events) == [[], []]


def test_sole_event_trust_is_only_for_the_attributes_named() -> None:
    # A Negated cue of the model across "but" is still dropped for a sole event.
    t = "She had no fever but developed a rash after amoxicillin."
    ev = _event(t, "developed", "a rash", attrs=(("Negated", True, "no"),))
    assert _attrs(t, [ev]) == [[]]


def test_model_trust_validates(tmp_path: Path) -> None:
    data = json.loads(Path(default_rules_path()).read_text(encoding="utf-8"))
    data["model_trust"][0]["when"] = "always"
    bad = tmp_path / "rules.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FormatError, match=r"model_trust\[0\]: field 'when'"):
        load_attribute_rules(bad)
    data["model_trust"] = []
    rules = AttributeRules.model_validate({k: v for k, v in data.items() if not k.startswith("_")})
    t = "Seizures associated with amphotericin B are rare, but physicians should be aware of the potential."
    ev = _event(t, "associated", "Seizures", attrs=(("Speculated", True, "potential"),))
    assert apply_attribute_scope(t, [ev], rules=rules)[0].attributes == ()


# --------------------------------------------------------------------------- severity


@pytest.mark.parametrize(
    ("text", "trigger", "effect", "cue", "value", "rule"),
    [
        ("She developed severe hepatotoxicity after isoniazid.", "developed", "severe hepatotoxicity", "severe", "High", "sev.severe"),
        ("She developed severe hepatotoxicity after isoniazid.", "developed", "hepatotoxicity", "severe", "High", "sev.severe"),
        ("A mild rash appeared after amoxicillin.", "appeared", "A mild rash", "mild", "Low", "sev.mild"),
        ("We report a fatal case of toxic epidermal necrolysis after carbamazepine.", "after",
         "toxic epidermal necrolysis", "fatal", "High", "sev.fatal"),
        ("Fatal gemcitabine-induced pulmonary toxicity in a patient.", "induced", "pulmonary toxicity", "Fatal", "High", "sev.fatal"),
    ],
)
def test_severity_modifies_the_effect(text: str, trigger: str, effect: str, cue: str, value: str, rule: str) -> None:
    s, e = _at(text, cue)
    assert _attrs(text, [_event(text, trigger, effect)]) == [[("Severity", value, cue, s, e, f"rule:{rule}")]]


def test_severity_word_on_another_noun_is_not_the_effects() -> None:
    t = "A patient with severe asthma developed hepatitis after isoniazid."
    assert _attrs(t, [_event(t, "developed", "hepatitis")]) == [[]]
    # A model's cue there is dropped too.
    ev = _event(t, "developed", "hepatitis", attrs=(("Severity", "High", "severe"),))
    assert _attrs(t, [ev]) == [[]]


def test_severity_inside_the_effect_is_a_link_rule() -> None:
    t = "Bone marrow aplasia and severe skin rash after methotrexate."
    ev = _event(t, "after", "Bone marrow aplasia and severe skin rash")
    assert _attrs(t, [ev]) == [[("Severity", "High", "severe", 24, 30, "rule:sev.severe")]]
    # The "inside" link decides where inside the Effect a word may stand: at its start only.
    data = json.loads(Path(default_rules_path()).read_text(encoding="utf-8"))
    data = {k: v for k, v in data.items() if not k.startswith("_")}
    for link in data["severity_links"]:
        if link["position"] == "inside":
            link["between"] = ""
    rules = AttributeRules.model_validate(data)
    assert apply_attribute_scope(t, [ev], rules=rules)[0].attributes == ()
    t = "Severe skin rash after methotrexate."
    out = apply_attribute_scope(t, [_event(t, "after", "Severe skin rash")], rules=rules)
    assert [(a.cue.text, a.source) for a in out[0].attributes if a.cue] == [("Severe", "rule:sev.severe")]


def test_model_severity_keeps_its_value() -> None:
    t = "She developed severe hepatotoxicity after isoniazid."
    ev = _event(t, "developed", "hepatotoxicity", attrs=(("Severity", "Medium", "severe"),))
    assert _attrs(t, [ev]) == [[("Severity", "Medium", "severe", 14, 20, "model")]]


# --------------------------------------------------------------------------- PHEE train sentences

# (id, text, [(trigger offsets, Effect offsets or None, event type)], expected per event).
# Gold events of PHEE train with their attributes stripped; the expected output equals
# the gold attributes unless noted.
_TRAIN = [
    (
        "7865488_2",
        "However, EO-induced noncardiogenic pulmonary edema has not been reported in human.",
        [((12, 19), (20, 50), "Adverse_event")],
        [[("Negated", True, "not", 55, 58, "rule:neg.not_been")]],
    ),
    (
        "11144696_10",
        "Venlafaxine-associated seizures at therapeutic doses have not been reported in the literature.",
        [((12, 22), (23, 31), "Adverse_event")],
        # PHEE marks it Negated; a novelty statement of a case report is asserted (issue 23,
        # pseudo.not_reported_in_literature; PHEE train is split on this phrasing)
        [[]],
    ),
    (
        "17458405_2",
        "Since its FDA approval in 2002, there are no known citations of ezetimibe-induced pancreatitis.",
        [((74, 81), (82, 94), "Adverse_event")],
        [[("Negated", True, "no", 42, 44, "rule:neg.no")]],
    ),
    (
        "9161656_5",
        "Antiasthmatic medications were prescribed, but the asthma symptoms did not improve.",
        [((75, 82), None, "Potential_therapeutic_event")],
        [[("Negated", True, "not", 71, 74, "rule:neg.not")]],
    ),
    (
        "15383642_9",
        "Tizanidine was used again after her BP had stabilized, but did not produce similar problems.",
        [((67, 74), (83, 91), "Adverse_event")],
        [[("Negated", True, "not", 63, 66, "rule:neg.not")]],
    ),
    (  # pseudo-negation: "no previous signs" is the Subject's history
        "2292051_2",
        "Six patients with no previous signs or symptoms suggestive of coronary artery disease developed "
        "acute coronary ischemia/infarction shortly after cis-diamine-dichloroplatinum II (cisplatin) -based chemotherapy.",
        [((86, 95), (96, 130), "Adverse_event")],
        [[]],
    ),
    (  # pseudo-negation: "not rare"
        "2595431_1",
        "Metoclopramide-induced parkinsonism is not rare, and appropriate dose reduction in patients with renal "
        "failure will help reduce the incidence of this morbidity.",
        [((15, 22), (23, 35), "Adverse_event")],
        [[]],
    ),
    (  # "no other causes" after ";" negates the alternatives
        "8749646_4",
        "We describe four patients who had seizures while receiving ofloxacin; no other causes were evident.",
        [((49, 58), (34, 42), "Adverse_event")],
        [[]],
    ),
    (  # "without" inside the Effect negates a part of it
        "424824_6",
        "Three patients received respectively 190 mg, 175 mg, and 196 mg of methotrexate and developed bilateral "
        "pulmonary infiltrates without evidence of peripheral blood eosinophilia.",
        [((84, 93), (94, 175), "Adverse_event")],
        [[]],
    ),
    (  # a cue that is the trigger itself
        "18396749_4",
        "In the absence of evidence of a potential role for concomitant medication i.e. hydroxychloroquine sulfate to "
        "play a role in the clinical, biochemical and morphological picture, an interaction between the herbal "
        "preparation and tibolone was suspected as the likely cause of liver damage.",
        [((240, 249), (273, 285), "Adverse_event")],
        [[("Speculated", True, "suspected", 240, 249, "rule:spec.suspected")]],
    ),
    (  # hedge and predicative severity in one sentence
        "17122225_2",
        "Serotonin syndrome is a potentially lethal adverse drug reaction that may occur in patients taking "
        "proserotoninergic medications.",
        [((74, 79), (0, 18), "Adverse_event")],
        [[("Speculated", True, "may", 70, 73, "rule:spec.may"), ("Severity", "High", "lethal", 36, 42, "rule:sev.lethal")]],
    ),
    (
        "11207969_4",
        "We report a fatal case of toxic epidermal necrolysis (TEN) resulting from a high dose of cytosine arabinoside (ARA-C).",
        [((59, 73), (26, 58), "Adverse_event")],
        [[("Severity", "High", "fatal", 12, 17, "rule:sev.fatal")]],
    ),
    (
        "2212262_1",
        "Severe heparin associated thrombocytopenia is a rare complication of heparin therapy.",
        [((15, 25), (26, 42), "Adverse_event")],
        [[("Severity", "High", "Severe", 0, 6, "rule:sev.severe")]],
    ),
]


@pytest.mark.parametrize(("sid", "text", "events", "expected"), _TRAIN, ids=[x[0] for x in _TRAIN])
def test_phee_train_sentences(sid: str, text: str, events: list, expected: list) -> None:
    evs = [_event(text, trig, eff, event_type=et) for trig, eff, et in events]
    assert _attrs(text, evs) == expected


# --------------------------------------------------------------------------- API


def test_no_events_and_other_fields_kept() -> None:
    assert apply_attribute_scope("Nothing here.", []) == []
    t = "The patient did not develop neutropenia while on clozapine."
    ev = _event(t, "develop", "neutropenia").model_copy(update={"score": 0.9, "event_id": "E1"})
    (out,) = apply_attribute_scope(t, [ev])
    assert out.score == 0.9 and out.event_id == "E1" and out.arguments == ev.arguments


def test_source_none_becomes_model() -> None:
    t = "The rash may have been induced by amoxicillin."
    ev = _event(t, "induced", "The rash", attrs=(("Speculated", True, "may"),))
    assert ev.attributes[0].source is None
    assert apply_attribute_scope(t, [ev])[0].attributes[0].source == "model"


def test_offsets_outside_the_text_raise() -> None:
    t = "The patient did not develop neutropenia while on clozapine."
    ev = _event(t, "develop", "neutropenia")
    with pytest.raises(OffsetError):
        apply_attribute_scope(t[:10], [ev])


def test_batch_equals_single_calls() -> None:
    texts = [
        "The patient did not develop neutropenia while on clozapine.",
        "Nothing happened.",
        "She developed severe hepatotoxicity after isoniazid.",
    ]
    events = [
        [_event(texts[0], "develop", "neutropenia")],
        [],
        [_event(texts[2], "developed", "hepatotoxicity")],
    ]
    batch = apply_attribute_scope_batch(texts, events)
    assert batch == [apply_attribute_scope(t, e) for t, e in zip(texts, events)]
    assert batch[1] == []
    with pytest.raises(InputError, match="2 texts but 3 event lists"):
        apply_attribute_scope_batch(texts[:2], events)


def test_shipped_rules_validate_and_cite_their_source() -> None:
    rules = load_attribute_rules()
    assert rules.id == "pv.attribute_scope.v1"
    assert Path(rules.source or "") == Path(default_rules_path())
    assert set(rules.categories.values()) == {"Negated", "Speculated"}
    everything = [*rules.context_rules, *rules.severity_rules, *rules.severity_links, *rules.model_trust]
    assert all(r.provenance for r in everything)
    ids = [r.id for r in everything]
    assert len(ids) == len(set(ids))
    directions = {r.direction for r in rules.context_rules}
    assert {"FORWARD", "BIDIRECTIONAL", "BACKWARD", "PSEUDO", "TERMINATE"} <= directions


def test_bad_rule_file_names_record_and_field(tmp_path: Path) -> None:
    data = json.loads(Path(default_rules_path()).read_text(encoding="utf-8"))
    data["context_rules"][2]["direction"] = "FOWARD"
    bad = tmp_path / "rules.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FormatError, match=r"context_rules\[2\]: field 'direction': .*'FOWARD' not in FORWARD") as exc:
        load_attribute_rules(bad)
    assert "rules.json" in str(exc.value)
    data["context_rules"][2]["direction"] = "FORWARD"
    data["context_rules"][3]["id"] = data["context_rules"][0]["id"]
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(FormatError, match="used twice"):
        load_attribute_rules(bad)
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(FormatError, match="not valid JSON"):
        load_attribute_rules(bad)
    with pytest.raises(InputError, match="not found"):
        load_attribute_rules(tmp_path / "missing.json")


def test_custom_rules(tmp_path: Path) -> None:
    data = json.loads(Path(default_rules_path()).read_text(encoding="utf-8"))
    data = {k: v for k, v in data.items() if not k.startswith("_")}
    data["context_rules"] = [r for r in data["context_rules"] if r["id"] != "neg.not"]
    rules = AttributeRules.model_validate(data)
    t = "The patient did not develop neutropenia while on clozapine."
    assert apply_attribute_scope(t, [_event(t, "develop", "neutropenia")], rules=rules)[0].attributes == ()


def test_speed_under_two_ms_per_sentence() -> None:
    t = "The patient did not develop neutropenia while on clozapine, but may have had severe hepatitis."
    events = [[_event(t, "develop", "neutropenia"), _event(t, "had", "severe hepatitis")]] * 300
    apply_attribute_scope_batch([t], events[:1])  # build the pipeline
    start = time.perf_counter()
    apply_attribute_scope_batch([t] * 300, events)
    assert (time.perf_counter() - start) / 300 < 0.002 * 5  # generous on a busy CI machine


def test_rules_on_phee_train_gold_events(shared_data: Path) -> None:
    """Setting (a) on train: gold events with attributes stripped reach the tuned figures."""
    from clinex.pv.evaluate import flatten, score
    from clinex.pv.formats.phee_json import read_phee_json

    gold = read_phee_json(shared_data / "phee" / "json" / "train.json")
    stripped = [s.model_copy(update={"events": tuple(e.model_copy(update={"attributes": ()}) for e in s.events)}) for s in gold]
    out = apply_attribute_scope_batch([s.text for s in stripped], [list(s.events) for s in stripped])
    pred = [s.model_copy(update={"events": tuple(e)}) for s, e in zip(stripped, out)]
    f = flatten(score(gold, pred))
    assert f["attributes.all.em_f1"] > 0.62
    assert f["attributes.Negated.em_f1"] > 0.6


def test_does_not_rule_out_is_a_hedge_not_a_negation() -> None:
    """PHEE dev annotates this sentence Speculated with the cue "does not rule out" (NegEx
    calls it a pseudo-negation: it never negates the event)."""
    t = "Previous successful treatment with one ACE inhibitor does not rule out the vasculitis caused by the drug."
    k, e = t.index("caused"), t.index("the vasculitis")
    ev = Event(
        event_type="Adverse_event",
        trigger=Span.from_offsets(t, (k, k + 6)),
        arguments=(Argument(role="Effect", span=Span.from_offsets(t, (e, e + 14))),),
    )
    (att,) = apply_attribute_scope(t, [ev])[0].attributes
    assert (att.name, att.value, att.cue.text, att.source) == (
        "Speculated", True, "does not rule out", "rule:spec.not_ruled_out",
    )


def test_model_severity_value_of_a_known_word_comes_from_the_rules() -> None:
    t = "She developed a mild rash after allopurinol."
    k, r = t.index("mild"), t.index("a mild rash")
    ev = Event(
        event_type="Adverse_event",
        trigger=Span.from_offsets(t, (4, 13)),
        arguments=(Argument(role="Effect", span=Span.from_offsets(t, (r, r + 11))),),
        attributes=(Attribute(name="Severity", value="High", cue=Span.from_offsets(t, (k, k + 4))),),
    )
    (out,) = apply_attribute_scope(t, [ev])
    assert [(a.name, a.value, a.cue.text, a.source) for a in out.attributes] == [
        ("Severity", "Low", "mild", "rule:sev.mild")
    ]


def test_denied_is_a_negation_cue() -> None:
    t = "The patient denied any rash after amoxicillin."
    k, r = t.index("after"), t.index("any rash")
    ev = Event(
        event_type="Adverse_event",
        trigger=Span.from_offsets(t, (k, k + 5)),
        arguments=(Argument(role="Effect", span=Span.from_offsets(t, (r, r + 8))),),
    )
    (out,) = apply_attribute_scope(t, [ev])
    assert [(a.name, a.cue.text, a.cue.start, a.source) for a in out.attributes] == [
        ("Negated", "denied", 12, "rule:neg.denied")
    ]


_WARM = """
import json, sys, threading
from clinex.pv import scope_pipeline as scope
from clinex.pv.steps import StepSettings, prepare

before = threading.active_count()
prepare(StepSettings(gate=object(), attribute_scope=True))
prepare(StepSettings(gate=object(), attribute_scope=True))
print(json.dumps({
    "threads": threading.active_count() - before,
    "pipelines": len(scope._CACHE),
    "spacy": "spacy" in sys.modules, "gazetteer": bool(__import__("clinex.pv.gazetteer", fromlist=["_DATA"])._DATA),
}))
"""

_NOTHING = """
import json, sys
from clinex.pv import scope_pipeline as scope
from clinex.pv.steps import StepSettings, prepare

prepare(StepSettings(gate=None, attribute_scope=False))
print(json.dumps({"pipelines": len(scope._CACHE), "spacy": "spacy" in sys.modules}))
"""


def test_prepare_builds_the_scope_pipeline_and_gazetteer_once_without_a_thread() -> None:
    """clinex.pv.steps.prepare loads the shipped scope pipeline and the drug gazetteer in
    the calling thread (no thread is started), once per process; settings with neither
    scope nor gate load nothing."""
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _WARM], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "threads": 0, "pipelines": 1, "spacy": True, "gazetteer": True}
    proc = subprocess.run([sys.executable, "-c", _NOTHING], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"pipelines": 0, "spacy": False}


_HIDER = """
import json, sys, threading
from clinex.context_rules import _ThreadHider

res, ready, done = {}, threading.Event(), threading.Event()


def owner():
    hider = _ThreadHider()
    sys.meta_path.insert(0, hider)
    try:
        try:
            import sklearn  # noqa: F401
            res["owner"] = "imported"
        except ModuleNotFoundError:
            res["owner"] = "hidden"
        import nltk
        res["owner_nltk"] = hasattr(nltk, "__version__")
        ready.set()
        done.wait(60)
    finally:
        sys.meta_path.remove(hider)


t = threading.Thread(target=owner)
t.start()
ready.wait(60)
import sklearn.feature_extraction.text  # noqa: F401
res["main"] = "imported"
done.set()
t.join()
print(json.dumps(res))
"""


def test_import_hiding_is_confined_to_the_importing_thread() -> None:
    """While one thread imports medspaCy (the model warm-up), scikit-learn is hidden
    from that thread only: the main thread imports it as usual (a stop-19 race)."""
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _HIDER], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"owner": "hidden", "owner_nltk": False, "main": "imported"}
