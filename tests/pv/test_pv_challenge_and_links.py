"""Issue 23 items 2-4: dechallenge / rechallenge, one event per drug -> effect link,
negation a reviewer trusts (clinex.pv.challenge, clinex.pv.links, the scope rules).

The sentences are those of the issue and the session's brief; each is run through the
shipped default model (``clinex.pv.pipeline.extract_record``, the path of every surface)
and its events are compared with the exact expected events: type, trigger, main
arguments, sub-arguments and attributes with their cue and rule.
"""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

from clinex.pv import challenge, links
from clinex.pv.evaluate import flatten, score
from clinex.pv.formats.brat import read_brat, write_brat
from clinex.pv.formats.phee_json import dumps_phee, parse_phee_line
from clinex.pv.pipeline import extract_record
from clinex.pv.schema import ATTRIBUTES, CHALLENGE_ATTRIBUTES, check_attribute
from clinex.pv.scope import load_attribute_rules
from clinex.pv.types import Argument, Attribute, Event, SentenceEvents
from clinex.text import Span

ADE, PTE = "Adverse_event", "Potential_therapeutic_event"
DECH = "rule:challenge.dechallenge.withdrawal"


def view(ev: Event) -> tuple:
    """An event as plain data: type, trigger, main arguments, sub-arguments, attributes."""
    return (
        ev.event_type,
        ev.trigger.text,
        tuple((a.role, a.span.text) for a in ev.arguments),
        tuple((main, a.role, a.span.text) for main, subs in ev.sub_arguments.items() for a in subs),
        tuple((a.name, a.value, a.cue.text if a.cue else None, a.source) for a in ev.attributes),
    )


def events_of(text: str) -> list[tuple]:
    item = extract_record("x", text)
    for ev in item.events:  # every span slices the text it came from
        spans = [ev.trigger, *(a.span for a in ev.arguments),
                 *(a.span for subs in ev.sub_arguments.values() for a in subs),
                 *(a.cue for a in ev.attributes if a.cue is not None)]
        for span in spans:
            for f in span.fragments:
                assert text[f.start:f.end] == f.text
    return [view(ev) for ev in item.events]


# ------------------------------------------------------------------ item 2: dechallenge / rechallenge
CHALLENGE = {
    "The agranulocytosis resolved after clozapine was withdrawn.": [
        (ADE, "resolved", (("Effect", "agranulocytosis"), ("Treatment", "clozapine")),
         (("Treatment", "Drug", "clozapine"),), (("Dechallenge", True, "withdrawn", DECH),)),
    ],
    "Hyponatremia resolved after sertraline was discontinued.": [
        (ADE, "resolved", (("Effect", "Hyponatremia"), ("Treatment", "sertraline")),
         (("Treatment", "Drug", "sertraline"),), (("Dechallenge", True, "discontinued", DECH),)),
    ],
    "Thrombocytopenia resolved within a week of stopping heparin.": [
        (ADE, "resolved", (("Effect", "Thrombocytopenia"), ("Treatment", "stopping heparin")),
         (("Treatment", "Time_elapsed", "within a week"), ("Treatment", "Drug", "heparin")),
         (("Dechallenge", True, "stopping", DECH),)),
    ],
    "The tremor improved after the dose of lithium was reduced.": [
        (ADE, "improved", (("Effect", "tremor"), ("Treatment", "lithium")),
         (("Treatment", "Drug", "lithium"),),
         (("Dechallenge", True, "reduced", "rule:challenge.dechallenge.dose_reduction"),)),
    ],
    "The neutropenia resolved when the dose of clozapine was reduced.": [
        (ADE, "resolved", (("Effect", "neutropenia"), ("Treatment", "clozapine")),
         (("Treatment", "Drug", "clozapine"),),
         (("Dechallenge", True, "reduced", "rule:challenge.dechallenge.dose_reduction"),)),
    ],
    "After withdrawal of carbamazepine, the rash resolved.": [
        (ADE, "resolved", (("Treatment", "withdrawal of carbamazepine"), ("Effect", "rash")),
         (("Treatment", "Drug", "carbamazepine"),), (("Dechallenge", True, "withdrawal", DECH),)),
    ],
    "Discontinuation of amiodarone led to resolution of the pneumonitis.": [
        (ADE, "led", (("Treatment", "amiodarone"), ("Effect", "pneumonitis")),
         (("Treatment", "Drug", "amiodarone"),), (("Dechallenge", True, "Discontinuation", DECH),)),
    ],
    "The rash recurred when carbamazepine was restarted.": [
        (ADE, "when", (("Effect", "The rash"), ("Treatment", "carbamazepine")),
         (("Treatment", "Drug", "carbamazepine"),),
         (("Rechallenge", True, "restarted", "rule:challenge.rechallenge.recurrence"),)),
    ],
    "The rash recurred after restarting carbamazepine.": [  # "restarting" is no new drug started
        (ADE, "after", (("Effect", "rash"), ("Treatment", "carbamazepine")),
         (("Treatment", "Drug", "carbamazepine"),),
         (("Rechallenge", True, "restarting", "rule:challenge.rechallenge.recurrence"),)),
    ],
    "Symptoms recurred upon rechallenge with clozapine.": [
        (ADE, "with", (("Effect", "Symptoms"), ("Treatment", "clozapine")),
         (("Treatment", "Drug", "clozapine"),),
         (("Rechallenge", True, "rechallenge", "rule:challenge.rechallenge.recurrence"),)),
    ],
}


@pytest.mark.parametrize("text", list(CHALLENGE))
def test_dechallenge_and_rechallenge(text: str) -> None:
    assert events_of(text) == CHALLENGE[text]


def test_no_positive_challenge_when_negated_or_hedged() -> None:
    for text in ("The rash did not resolve after carbamazepine was withdrawn.",
                 "The rash did not recur when carbamazepine was restarted.",
                 "After stopping indapamide, glucose tolerance impairing may be reversed.",
                 "There was no recurrence after rechallenge with clozapine.",
                 "The rash persisted despite withdrawal of carbamazepine."):
        assert challenge.find_challenges(text) == [], text
    (ev,) = extract_record("x", "The rash did not recur when carbamazepine was restarted.").events
    assert ev.attribute("Rechallenge") is None and ev.attribute("Negated") is not None


def test_find_challenges_cues() -> None:
    text = "Fever resolved after discontinuation of furosemide and recurred after its reintroduction."
    found = [(c.rule.attribute, text[slice(*c.cue)], text[slice(*c.outcome)]) for c in challenge.find_challenges(text)]
    assert found == [("Dechallenge", "discontinuation", "resolved"), ("Rechallenge", "reintroduction", "recurred")]
    text = "The tremor improved after a dose reduction of lithium."
    assert [(c.rule.id, text[slice(*c.cue)]) for c in challenge.find_challenges(text)] == [
        ("challenge.dechallenge.dose_reduction", "reduction")]


def _arg(text: str, role: str, piece: str, label: str | None = None) -> Argument:
    start = text.index(piece)
    return Argument(role=role, span=Span.from_offsets(text, (start, start + len(piece)), label=label or role))


def test_mark_challenges_picks_the_withdrawn_drug_not_the_treatment_of_the_reaction() -> None:
    text = "The agranulocytosis resolved after clozapine was withdrawn and filgrastim was given."
    ev = Event(
        event_type=PTE,
        trigger=Span.from_offsets(text, (20, 28)),
        arguments=(_arg(text, "Effect", "agranulocytosis"),
                   _arg(text, "Treatment", "clozapine was withdrawn and filgrastim")),
        sub_arguments={"Treatment": (_arg(text, "Drug", "clozapine", "Treatment.Drug"),
                                     _arg(text, "Drug", "filgrastim", "Treatment.Drug"))},
    )
    (out,) = challenge.mark_challenges(text, [ev])
    assert view(out) == (
        ADE, "resolved", (("Effect", "agranulocytosis"), ("Treatment", "clozapine")),
        (("Treatment", "Drug", "clozapine"),), (("Dechallenge", True, "withdrawn", DECH),))


def test_only_drug_of_a_generic_reference() -> None:
    text = "Obsessive-compulsive symptoms emerged after starting risperidone and resolved within 3 days of discontinuation."
    ev = Event(event_type=ADE, trigger=Span.from_offsets(text, (30, 37)),
               arguments=(_arg(text, "Effect", "Obsessive-compulsive symptoms"), _arg(text, "Treatment", "risperidone")))
    (out,) = challenge.mark_challenges(text, [ev])
    assert out.attribute("Dechallenge").cue.text == "discontinuation"
    # a named drug at the withdrawal word that is not the event's: no dechallenge of the event's drug
    text = "Capecitabine was discontinued and the rash resolved after the woman took diphenhydramine."
    ev = Event(event_type=PTE, trigger=Span.from_offsets(text, (67, 71)),
               arguments=(_arg(text, "Treatment", "diphenhydramine"),))
    assert challenge.mark_challenges(text, [ev]) == [ev]


# ------------------------------------------------------------------ item 3: one event per drug -> effect link
LINKS = {
    "Warfarin caused a major gastrointestinal bleed, while clopidogrel was associated with a mild rash.": [
        (ADE, "caused", (("Treatment", "Warfarin"), ("Effect", "a major gastrointestinal bleed")),
         (("Treatment", "Drug", "Warfarin"),), (("Severity", "High", "major", "rule:sev.major"),)),
        (ADE, "associated", (("Treatment", "clopidogrel"), ("Effect", "mild rash")),
         (("Treatment", "Drug", "clopidogrel"),), (("Severity", "Low", "mild", "rule:sev.mild"),)),
    ],
    "Amiodarone induced hypothyroidism in this 66-year-old man, and subsequent levothyroxine therapy "
    "normalized his thyroid function.": [
        (ADE, "induced", (("Treatment", "Amiodarone"), ("Effect", "hypothyroidism"), ("Subject", "this 66-year-old man")),
         (("Treatment", "Drug", "Amiodarone"), ("Subject", "Age", "66-year-old"), ("Subject", "Gender", "man")), ()),
        (PTE, "normalized", (("Treatment", "subsequent levothyroxine therapy"), ("Effect", "normalized his thyroid function")),
         (("Treatment", "Drug", "levothyroxine"),), ()),
    ],
    "Lithium caused tremor, whereas valproate caused weight gain.": [
        (ADE, "caused", (("Treatment", "Lithium"), ("Effect", "tremor")), (("Treatment", "Drug", "Lithium"),), ()),
        (ADE, "caused", (("Treatment", "valproate"), ("Effect", "weight gain")), (("Treatment", "Drug", "valproate"),), ()),
    ],
    "We report a renal transplant recipient who received nifedipine sustained-release tablets for "
    "cyclosporin A-induced hypertension.": [
        (ADE, "induced", (("Subject", "a renal transplant recipient"), ("Treatment", "cyclosporin A"), ("Effect", "hypertension")),
         (("Subject", "Disorder", "renal transplant"), ("Treatment", "Drug", "cyclosporin A")), ()),
    ],
    "Patients received granisetron 3 mg intravenously for prophylaxis of cisplatin-induced nausea and vomiting.": [
        (ADE, "induced", (("Subject", "Patients"), ("Treatment", "cisplatin"), ("Effect", "nausea and vomiting")),
         (("Treatment", "Drug", "cisplatin"),), ()),
    ],
    "Granisetron 40 microg/kg was given for prophylaxis of cisplatin-induced nausea and vomiting in 30 children.": [
        (ADE, "induced", (("Treatment", "cisplatin"), ("Effect", "nausea and vomiting"), ("Subject", "30 children")),
         (("Subject", "Age", "30 children"), ("Treatment", "Drug", "cisplatin")), ()),
    ],
    "Nausea, vomiting, and diarrhea developed after methotrexate.": [
        (ADE, "developed", (("Effect", "Nausea, vomiting, and diarrhea"), ("Treatment", "methotrexate")),
         (("Treatment", "Drug", "methotrexate"),), ()),
    ],
}


@pytest.mark.parametrize("text", list(LINKS))
def test_one_event_per_link(text: str) -> None:
    assert events_of(text) == LINKS[text]


def test_levothyroxine_is_never_a_drug_of_the_amiodarone_event() -> None:
    text = next(t for t in LINKS if t.startswith("Amiodarone"))
    ade = next(ev for ev in extract_record("x", text).events if ev.event_type == ADE)
    drugs = {d.span.text for c in ade.combinations for d in c.drugs}
    drugs |= {a.span.text for a in ade.sub_arguments.get("Treatment", ())} | {a.span.text for a in ade.main("Treatment")}
    assert drugs == {"Amiodarone"}


def test_split_links_keeps_a_list_whole() -> None:
    text = "Nausea, vomiting, and rash developed after methotrexate, and the patient recovered."
    ev = Event(event_type=ADE, trigger=Span.from_offsets(text, (27, 36)),
               arguments=(_arg(text, "Effect", "Nausea, vomiting, and rash"), _arg(text, "Treatment", "methotrexate")))
    assert links.split_links(text, [ev]) == [ev]  # the list is one argument; the last clause names no drug


def test_drop_treating_drugs_without_a_named_cause_is_a_therapeutic_event() -> None:
    text = "Paroxysmal hemicrania responding to topiramate."
    ev = Event(event_type=ADE, trigger=Span.from_offsets(text, (22, 32)),
               arguments=(_arg(text, "Effect", "Paroxysmal hemicrania"), _arg(text, "Treatment", "topiramate")))
    out = links.drop_treating_drugs(text, ev)
    assert out.event_type == PTE and out.arguments == ev.arguments


@pytest.mark.parametrize("text", [
    "Acute interactions between phenytoin and isradipine were probably responsible for the lethargy.",
    "Myasthenic patients receiving ampicillin should be closely monitored for acute exacerbations.",
    "Ketamine prescribed for pain causes damage to the urinary tract.",
])
def test_a_drug_before_for_is_not_always_a_treatment(text: str) -> None:
    effect = {"lethargy": "lethargy", "Myasthen": "acute exacerbations", "Ketamine": "damage to the urinary tract"}
    eff = next(v for k, v in effect.items() if k in text)
    drug = next(w for w in ("isradipine", "ampicillin", "Ketamine") if w in text)
    ev = Event(event_type=ADE, trigger=Span.from_offsets(text, (0, 5)),
               arguments=(_arg(text, "Treatment", drug), _arg(text, "Effect", eff)))
    assert links.drop_treating_drugs(text, ev) == ev


def test_induced_by() -> None:
    for text, drug in (("for cyclosporin A-induced hypertension", "cyclosporin A"),
                       ("prophylaxis of cisplatin-induced nausea", "cisplatin"),
                       ("a case of 5-fluorouracil-induced severe cardiotoxicity", "5-fluorouracil"),
                       ("drug-induced hepatitis", None)):
        effect = text.split()[-1]
        found = links.induced_by(text, text.index(effect))
        assert (text[slice(*found)] if found else None) == drug


def test_another_groups_subject_numbers_are_dropped() -> None:
    text = "Although headache occurred in one patient, the other five reported no side effects."
    ev = Event(event_type=ADE, trigger=Span.from_offsets(text, (18, 26)),
               arguments=(_arg(text, "Effect", "headache"), _arg(text, "Subject", "one patient")),
               sub_arguments={"Subject": (_arg(text, "Population", "one", "Subject.Population"),
                                          _arg(text, "Population", "five", "Subject.Population"))})
    out = links.drop_other_group_subjects(text, ev)
    assert [a.span.text for a in out.sub_arguments["Subject"]] == ["one"]


# ------------------------------------------------------------------ item 4: negation a reviewer trusts
NEGATION = {
    "Propoxyphene-induced wide complex dysrhythmia responsive to sodium bicarbonate therapy has not been "
    "previously reported in the literature.": [
        (ADE, "induced", (("Treatment", "Propoxyphene"), ("Effect", "wide complex dysrhythmia")), (), ()),
    ],
    "There is no consensus on the treatment of ticlopidine-induced marrow aplasia.": [
        (ADE, "induced", (("Treatment", "ticlopidine"), ("Effect", "marrow aplasia")), (("Treatment", "Drug", "ticlopidine"),), ()),
    ],
    "Although fluoxetine-induced headache occurred in one patient, the other five reported no side effects "
    "at the doses used.": [
        (ADE, "induced", (("Treatment", "fluoxetine"), ("Effect", "headache"), ("Subject", "one patient")),
         (("Treatment", "Drug", "fluoxetine"), ("Subject", "Population", "one")), ()),
    ],
    # denies only a direct or sole role of the drug: hedged (Speculated), not Negated (docs/pv.md)
    "The hepatitis was not a direct result of isoniazid.": [
        (ADE, "result", (("Effect", "hepatitis"), ("Treatment", "isoniazid")), (("Treatment", "Drug", "isoniazid"),),
         (("Speculated", True, "not a direct result", "rule:spec.not_direct_result"),)),
    ],
    "The hepatitis was not caused by isoniazid.": [
        (ADE, "caused", (("Effect", "hepatitis"), ("Treatment", "isoniazid")), (("Treatment", "Drug", "isoniazid"),),
         (("Negated", True, "not", "rule:neg.not"),)),
    ],
    "No adverse events were observed.": [],
    "No adverse events related to the drug were observed.": [],
}


@pytest.mark.parametrize("text", list(NEGATION))
def test_negation_a_reviewer_trusts(text: str) -> None:
    assert events_of(text) == NEGATION[text]


def test_real_negations_stay_negated() -> None:
    for text in ("The patient did not develop neutropenia while on clozapine.",
                 "None of the other patients developed a rash on amoxicillin."):
        evs = extract_record("x", text).events
        assert evs and all(ev.attribute("Negated") is not None for ev in evs), text


def test_new_rules_have_provenance() -> None:
    rules = load_attribute_rules()
    new = {"pseudo.not_previously_reported", "pseudo.not_reported_previously", "pseudo.not_reported_in_literature",
           "pseudo.not_reported_to_date", "pseudo.no_consensus", "term.other_patients", "spec.not_direct_result"}
    by_id = {r.id: r for r in rules.context_rules}
    assert new <= set(by_id)
    assert all("Chapman" in by_id[i].provenance or "Harkema" in by_id[i].provenance for i in new)
    sev = {r.id: r for r in rules.severity_rules}
    assert sev["sev.major"].value == "High" and "ISTH" in sev["sev.major"].provenance
    assert all(r.provenance and "WHO-UMC" in r.provenance for r in challenge.CHALLENGE_RULES.values())


# ------------------------------------------------------------------ the attributes in every output
def _dechallenged() -> SentenceEvents:
    return extract_record("s1", "The agranulocytosis resolved after clozapine was withdrawn.")


def test_schema_keeps_pheee_attributes_and_adds_the_challenge_ones() -> None:
    assert ATTRIBUTES == ("Speculated", "Negated", "Severity")
    assert CHALLENGE_ATTRIBUTES == ("Dechallenge", "Rechallenge")
    assert check_attribute("Dechallenge", True) == "Dechallenge"


def test_phee_json_round_trip() -> None:
    item = _dechallenged()
    line = dumps_phee(item)
    node = json.loads(line)["annotations"][0]["events"][0]["Dechallenge"]
    assert node == {"text": [["withdrawn"]], "start": [[49]], "entity_id": [node["entity_id"][0]],
                    "value": True, "source": [DECH]}
    back = parse_phee_line(line)
    assert [view(e) for e in back.events] == [view(e) for e in item.events]


def test_brat_round_trip(tmp_path: Path) -> None:
    item = _dechallenged()
    txt, ann = write_brat(item, tmp_path)
    lines = ann.read_text(encoding="utf-8").splitlines()
    assert any(line.split("\t")[1].startswith("Dechallenge_cue 49 58") for line in lines if line.startswith("T"))
    assert any(line.split("\t")[1].startswith("Dechallenge E") for line in lines if line.startswith("A"))
    back = read_brat(txt)
    assert [view(e) for e in back.events] == [view(e) for e in item.events]


def test_the_phee_scorer_ignores_the_challenge_attributes() -> None:
    item = _dechallenged()
    (ev,) = item.events
    plain = item.model_copy(update={"events": (ev.model_copy(update={
        "attributes": tuple(a for a in ev.attributes if a.name != "Dechallenge")}),)})
    assert flatten(score([plain], [item])) == flatten(score([plain], [plain]))
    assert not any("Dechallenge" in k for k in flatten(score([item], [item])))


def test_cli_listing_prints_the_attribute(cli) -> None:
    res = cli("pv", "extract", "The agranulocytosis resolved after clozapine was withdrawn.")
    assert res.code == 0, res.stderr
    assert "Dechallenge=True" in res.stdout and "withdrawn" in res.stdout


def test_attribute_type_accepts_a_challenge_attribute() -> None:
    text = "x withdrawn"
    att = Attribute(name="Dechallenge", value=True, cue=Span.from_offsets(text, (2, 11)), source=DECH)
    assert att.cue.text == "withdrawn"


def test_module_doctests() -> None:
    for module in (links, challenge):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__


def test_repeat_challenge_is_a_rechallenge() -> None:
    """Fresh-user QA on BC5CDR 6504332: 'On repeat challenge with phenobarbital, the
    dyskinesia recurred.' was not flagged."""
    from clinex.pv.challenge import find_challenges

    text = "On repeat challenge with phenobarbital, the dyskinesia recurred."
    assert [(c.rule.attribute, text[slice(*c.cue)]) for c in find_challenges(text)] == [
        ("Rechallenge", "repeat challenge")]
