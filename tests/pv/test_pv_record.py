"""Issue 23 item 1: an abstract is one document (clinex.pv.record), and its case-level
drug -> reaction pairs (clinex.pv.pairs) in PHEE JSON.

The records are real-shaped abstracts (title first) run through the shipped default model
(``clinex.pv.pipeline.extract_record``, the path of every surface); events and pairs are
compared with exact expected values, provenance and record-level offsets included. The
rules themselves are also checked on hand-built events, without a model.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from clinex.errors import FormatError
from clinex.pv.evaluate import evaluate_files, flatten
from clinex.pv.formats.phee_json import dumps_phee, parse_phee_line, read_phee_json, write_phee_json
from clinex.pv.pairs import reaction_key, record_pairs
from clinex.pv.pipeline import extract_record, extract_records, sentence_pieces
from clinex.pv.record import anaphor_spans, drug_key, drug_mentions, resolve_record
from clinex.pv.types import Argument, Attribute, Event, Pair, SentenceEvents
from clinex.text import Span

ADE, PTE = "Adverse_event", "Potential_therapeutic_event"
MISSING, ANAPHOR = "rule:record.drug.missing", "rule:record.drug.anaphor"
DECH = "rule:challenge.dechallenge.withdrawal"


def arg(a: Argument) -> tuple:
    return (a.role, a.span.text, a.span.start, a.source, a.from_sentence)


def view(ev: Event) -> tuple:
    """An event as plain data, with each argument's offset and provenance."""
    return (
        ev.event_type,
        ev.trigger.text,
        tuple(arg(a) for a in ev.arguments),
        tuple((main,) + arg(a) for main, subs in ev.sub_arguments.items() for a in subs),
        tuple((a.name, a.value, a.cue.text if a.cue else None, a.source) for a in ev.attributes),
    )


def extracted(text: str, **kw) -> SentenceEvents:
    item = extract_record("r", text, **kw) if not kw else extract_records([("r", text)], **kw)[0]
    for ev in item.events:  # every span slices the record's text
        spans = [ev.trigger, *(a.span for a in ev.arguments),
                 *(a.span for subs in ev.sub_arguments.values() for a in subs),
                 *(a.cue for a in ev.attributes if a.cue is not None)]
        for span in spans:
            for f in span.fragments:
                assert text[f.start:f.end] == f.text
    return item


# ------------------------------------------------------------------ through the default model

CLOZAPINE = ("Clozapine-induced agranulocytosis: a case report. A 34-year-old man developed agranulocytosis. "
             "The drug was withdrawn and the neutrophil count recovered.")


SUBJECT = "rule:record.subject.single_patient"


def test_the_titles_drug_goes_to_the_events_that_name_none() -> None:
    item = extracted(CLOZAPINE)
    assert [(s, e) for s, e, _ in sentence_pieces(CLOZAPINE)] == [(0, 49), (50, 94), (95, 153)]
    assert [view(ev) for ev in item.events] == [
        (ADE, "induced",
         (("Treatment", "Clozapine", 0, None, None), ("Effect", "agranulocytosis", 18, None, None),
          ("Subject", "a case", 35, None, None)),
         (("Treatment", "Drug", "Clozapine", 0, None, None),), ()),
        # the sentence names no drug: the title's, at the title's offsets, with its provenance
        (ADE, "developed",
         (("Subject", "A 34-year-old man", 50, None, None), ("Effect", "agranulocytosis", 78, None, None),
          ("Treatment", "Clozapine", 0, MISSING, 0)),
         (("Subject", "Age", "34-year-old", 52, None, None), ("Subject", "Gender", "man", 64, None, None),
          ("Treatment", "Drug", "Clozapine", 0, MISSING, 0)), ()),
        # "The drug" refers back: kept as the Treatment, its Drug is the title's
        # ... and its subject is the one patient the record describes (sentence 1)
        (ADE, "recovered",
         (("Treatment", "The drug was withdrawn", 95, None, None), ("Effect", "neutrophil count", 126, None, None),
          ("Subject", "A 34-year-old man", 50, SUBJECT, 1)),
         (("Treatment", "Drug", "Clozapine", 0, ANAPHOR, 0),
          ("Subject", "Age", "34-year-old", 52, SUBJECT, 1), ("Subject", "Gender", "man", 64, SUBJECT, 1)),
         (("Dechallenge", True, "withdrawn", DECH),)),
    ]
    assert record_pairs(item) == [
        # the recovery is stated of a measurement (the neutrophil count): it is the dechallenge
        # of the drug's reaction named before, agranulocytosis (clinex.pv.pairs._MEASURE)
        Pair(drug="clozapine", drug_text="Clozapine", reaction="agranulocytosis", reaction_text="agranulocytosis",
             event_type=ADE, dechallenge=True, evidence=((0, 49), (50, 94), (95, 153))),
    ]


def test_without_cross_sentence_reading_the_gate_keeps_only_the_title() -> None:
    item = extracted(CLOZAPINE, cross_sentence=False)
    assert [ev.trigger.text for ev in item.events] == ["induced"]
    assert [(p.drug, p.reaction) for p in record_pairs(item)] == [("clozapine", "agranulocytosis")]


def test_two_drugs_named_before_the_drug_resolve_nothing() -> None:
    text = ("Lithium and haloperidol in a patient with mania. "
            "She developed neuroleptic malignant syndrome after the drug was increased.")
    item = extracted(text)
    assert [view(ev) for ev in item.events] == [
        (ADE, "in",
         (("Treatment", "Lithium and haloperidol", 0, None, None), ("Subject", "a patient with mania", 27, None, None)),
         (("Treatment", "Drug", "Lithium", 0, None, None), ("Treatment", "Drug", "haloperidol", 12, None, None),
          ("Treatment", "Disorder", "mania", 42, None, None)), ()),
        (ADE, "developed",
         (("Subject", "She", 49, None, None), ("Effect", "neuroleptic malignant syndrome", 63, None, None),
          ("Treatment", "the drug was increased", 100, None, None)),
         (), ()),
    ]
    assert record_pairs(item) == []  # "the drug" with no antecedent names no drug


def test_a_drug_named_in_the_events_own_sentence_is_left_as_it_is() -> None:
    text = "Clozapine-induced agranulocytosis: a case report. A 34-year-old man developed agranulocytosis on clozapine."
    item = extracted(text)
    assert item.events == extracted(text, cross_sentence=False).events
    assert [view(ev) for ev in item.events][1] == (
        ADE, "developed",
        (("Subject", "A 34-year-old man", 50, None, None), ("Effect", "agranulocytosis", 78, None, None),
         ("Treatment", "clozapine", 97, None, None)),
        (("Subject", "Age", "34-year-old", 52, None, None), ("Subject", "Gender", "man", 64, None, None),
         ("Treatment", "Drug", "clozapine", 97, None, None)), ())
    assert [(p.drug, p.reaction, p.evidence, p.across_sentences) for p in record_pairs(item)] == [
        ("clozapine", "agranulocytosis", ((0, 49), (50, 107)), False)]


def test_a_drug_class_refers_to_the_drug_named_before() -> None:
    text = ("Statins and myopathy. Simvastatin was started in a 70-year-old man. "
            "He developed rhabdomyolysis after the statin dose was doubled.")
    item = extracted(text)
    assert view(item.events[1]) == (
        ADE, "developed",
        (("Subject", "He", 68, None, None), ("Effect", "rhabdomyolysis", 81, None, None),
         ("Treatment", "statin dose was doubled", 106, None, None)),
        (("Treatment", "Drug", "Simvastatin", 22, ANAPHOR, 1),), ())
    assert [(p.drug, p.reaction, p.across_sentences) for p in record_pairs(item)] == [
        ("statins", "myopathy", False), ("simvastatin", "rhabdomyolysis", True)]


def test_a_reaction_after_the_drug_was_named_in_the_body() -> None:
    text = "Hepatotoxicity of ketoconazole. Ketoconazole was given to 20 patients. Jaundice developed in three of them."
    item = extracted(text)
    assert view(item.events[2]) == (
        ADE, "developed",
        (("Effect", "Jaundice", 71, None, None), ("Subject", "three", 93, None, None),
         ("Treatment", "Ketoconazole", 32, MISSING, 1)),
        (("Subject", "Population", "three", 93, None, None), ("Treatment", "Drug", "Ketoconazole", 32, MISSING, 1)),
        ())
    assert record_pairs(item)[1] == Pair(
        drug="ketoconazole", drug_text="Ketoconazole", reaction="jaundice", reaction_text="Jaundice",
        event_type=ADE, across_sentences=True, evidence=((71, 107),))


def test_one_sentence_records_are_never_changed(shared_data: Path) -> None:
    items = read_phee_json(shared_data / "phee" / "json" / "dev.json")[:120]
    records = [(it.id, it.text) for it in items]
    assert extract_records(records) == extract_records(records, cross_sentence=False)


# ------------------------------------------------------------------ PHEE JSON


def test_phee_json_carries_provenance_and_pairs_and_round_trips(tmp_path: Path) -> None:
    item = extracted(CLOZAPINE)
    line = dumps_phee(item)
    obj = json.loads(line)
    developed = obj["annotations"][0]["events"][1]["Treatment"]
    assert (developed["text"], developed["start"], developed["source"], developed["from_sentence"]) == (
        [["Clozapine"]], [[0]], [MISSING], [0])
    assert developed["Drug"]["source"] == [MISSING]
    assert obj["pairs"] == [
        {"drug": "clozapine", "drug_text": "Clozapine", "reaction": "agranulocytosis",
         "reaction_text": "agranulocytosis", "event_type": ADE, "negated": False, "speculated": False,
         "dechallenge": True, "rechallenge": False, "across_sentences": False,
         "evidence": [[0, 49], [50, 94], [95, 153]]},
    ]
    back = parse_phee_line(line)
    assert dumps_phee(back) == line  # pairs are derived: recomputed, same bytes
    assert [tuple(arg(a) for a in ev.arguments) for ev in back.events] == [
        tuple(arg(a) for a in ev.arguments) for ev in item.events]
    assert back.events[1].sub_arguments["Treatment"][0].from_sentence == 0
    # written by write_phee_json, read back, written again: the same file
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write_phee_json([item], a)
    write_phee_json(read_phee_json(a), b)
    assert a.read_bytes() == b.read_bytes()


def test_pairs_are_written_only_for_predictions_unless_asked() -> None:
    item = extracted(CLOZAPINE)
    gold_like = item.model_copy(update={"model": None})
    assert "pairs" not in json.loads(dumps_phee(gold_like))
    assert len(json.loads(dumps_phee(gold_like, pairs=True))["pairs"]) == 1  # clozapine -> agranulocytosis (dechallenge)
    assert "pairs" not in json.loads(dumps_phee(item, pairs=False))
    empty = SentenceEvents(id="e", text="", model="m")
    assert "pairs" not in json.loads(dumps_phee(empty))
    assert json.loads(dumps_phee(empty, pairs=True))["pairs"] == []


def test_the_scorer_ignores_pairs_and_provenance(tmp_path: Path) -> None:
    item = extracted(CLOZAPINE)
    gold, with_pairs, without = tmp_path / "gold.json", tmp_path / "p1.json", tmp_path / "p2.json"
    write_phee_json([item.model_copy(update={"model": None})], gold)
    write_phee_json([item], with_pairs)
    write_phee_json([item], without, pairs=False)
    assert "pairs" in with_pairs.read_text("utf-8") and "pairs" not in without.read_text("utf-8")
    flat = flatten(evaluate_files(gold, with_pairs))
    assert flat == flatten(evaluate_files(gold, without))
    assert flat["trigger.classification.f1"] == 1.0 and flat["arguments.classification.main.em_f1"] == 1.0


def test_bad_provenance_names_the_field() -> None:
    line = dumps_phee(extracted(CLOZAPINE), pairs=False)
    bad = line.replace('"source": ["rule:record.drug.missing"], "from_sentence": [0], "Drug"',
                       '"source": "rule:record.drug.missing", "from_sentence": [0], "Drug"')
    assert bad != line
    with pytest.raises(FormatError, match=r"events\[1\]\.Treatment\.source'"):
        parse_phee_line(bad)
    bad = line.replace('"from_sentence": [0], "Drug"', '"from_sentence": [-1], "Drug"')
    with pytest.raises(FormatError, match=r"Treatment\.from_sentence'"):
        parse_phee_line(bad)


# ------------------------------------------------------------------ the rules, without a model


def _span(text: str, word: str, at: int = 0) -> Span:
    start = text.index(word, at)
    return Span.from_offsets(text, (start, start + len(word)))


def _event(text: str, trigger: str, *, effect: str | None = None, drug: str | None = None,
           treatment: str | None = None, etype: str = ADE, attrs: tuple = (), at: int = 0) -> Event:
    """An event whose words are the first of each after offset ``at``."""
    args = []
    if effect:
        args.append(Argument(role="Effect", span=_span(text, effect, at)))
    if treatment:
        args.append(Argument(role="Treatment", span=_span(text, treatment, at)))
    subs = {"Treatment": (Argument(role="Drug", span=_span(text, drug, at)),)} if drug else {}
    return Event(event_type=etype, trigger=_span(text, trigger, at), arguments=tuple(args), sub_arguments=subs,
                 attributes=attrs)


def _sentences(text: str) -> list[tuple[int, int]]:
    return [(s, e) for s, e, _ in sentence_pieces(text)]


def _drugs(ev: Event) -> list[tuple]:
    return [arg(a) for a in ev.sub_arguments.get("Treatment", ()) if a.role == "Drug"]


def test_the_most_recent_sentence_naming_one_drug_decides() -> None:
    text = "Aspirin and warfarin in the elderly. Warfarin was then given alone. Bleeding occurred in two patients."
    ev = _event(text, "occurred", effect="Bleeding")
    (out,) = resolve_record(text, _sentences(text), [ev])
    assert _drugs(out) == [("Drug", "Warfarin", 37, MISSING, 1)]
    # the same sentence with the two drugs named together last: no antecedent
    text2 = "Warfarin in the elderly. Aspirin and warfarin were given. Bleeding occurred in two patients."
    ev2 = _event(text2, "occurred", effect="Bleeding")
    assert resolve_record(text2, _sentences(text2), [ev2]) == [ev2]


def test_a_drug_named_only_in_the_title_needs_the_reaction_repeated() -> None:
    text = "Warfarin in the elderly. Bleeding occurred in two patients."
    ev = _event(text, "occurred", effect="Bleeding")
    assert resolve_record(text, _sentences(text), [ev]) == [ev]  # background, not a report
    text = "Warfarin-induced bleeding in the elderly. Bleeding occurred in two patients."
    title = _event(text, "induced", effect="bleeding", drug="Warfarin", treatment="Warfarin")
    ev = _event(text, "occurred", effect="Bleeding")
    assert _drugs(resolve_record(text, _sentences(text), [title, ev])[1]) == [("Drug", "Warfarin", 0, MISSING, 0)]


def test_indications_hedges_and_drugs_of_the_own_sentence_block_the_missing_drug_rule() -> None:
    title = "Sertraline in the elderly. Sertraline was given. "
    text = title + "Hyponatremia occurred."
    ev = _event(text, "occurred", effect="Hyponatremia")
    assert _drugs(resolve_record(text, _sentences(text), [ev])[0]) == [("Drug", "Sertraline", 27, MISSING, 1)]
    # the same event, but the record names the reaction as what a drug treats
    text = title + "Patients with hyponatremia improved. Hyponatremia occurred."
    pte = _event(text, "improved", effect="hyponatremia", etype=PTE)
    ev = _event(text, "occurred", effect="Hyponatremia", at=text.index("Hyponatremia occurred"))
    assert resolve_record(text, _sentences(text), [pte, ev])[1] == ev
    # hedged
    text = title + "Hyponatremia may have occurred."
    spec = Attribute(name="Speculated", value=True, cue=_span(text, "may"))
    ev = _event(text, "occurred", effect="Hyponatremia", attrs=(spec,))
    assert resolve_record(text, _sentences(text), [ev]) == [ev]
    # its own sentence names a drug the model did not attach
    text = title + "Hyponatremia occurred after fluoxetine."
    ev = _event(text, "occurred", effect="Hyponatremia")
    assert resolve_record(text, _sentences(text), [ev]) == [ev]
    # the first sentence names no drug: not a text about one
    text = "Sodium disorders in the elderly. Sertraline was given. Hyponatremia occurred."
    ev = _event(text, "occurred", effect="Hyponatremia")
    assert resolve_record(text, _sentences(text), [ev]) == [ev]


def test_ungated_events_are_kept_only_with_a_drug() -> None:
    text = "Sertraline in the elderly. Sertraline was given. Hyponatremia occurred. Fever occurred after fluoxetine."
    ok = _event(text, "occurred", effect="Hyponatremia")
    has_drug = _event(text, "occurred", effect="Fever", drug="fluoxetine", treatment="fluoxetine",
                      at=text.index("Fever"))
    out = resolve_record(text, _sentences(text), [], [ok, has_drug])
    assert [(ev.trigger.start, _drugs(ev)) for ev in out] == [(62, [("Drug", "Sertraline", 27, MISSING, 1)])]


def test_drug_keys_abbreviations_and_anaphors() -> None:
    assert drug_key("Tylenol") == "acetaminophen" and drug_key("intravenous clonidine") == "clonidine"
    text = "Carbamazepine (CBZ) toxicity. Hyponatremia on CBZ."
    mentions, aliases = drug_mentions(text, _sentences(text))
    assert aliases == {"cbz": "carbamazepine"}
    assert [(m.text, m.key, m.sentence) for m in mentions] == [
        ("Carbamazepine", "carbamazepine", 0), ("CBZ", "carbamazepine", 0), ("CBZ", "carbamazepine", 1)]
    t = "The drug was stopped; its use, these antibiotics, the statin and this treatment; the drug-induced rash."
    assert [t[s:e] for s, e in anaphor_spans(t)] == [
        "The drug", "its use", "these antibiotics", "the statin", "this treatment"]


def test_pairs_merge_their_events() -> None:
    text = "Rash after Tylenol. No rash after paracetamol. The rash resolved after paracetamol was stopped."
    neg = Attribute(name="Negated", value=True, cue=_span(text, "No"))
    dech = Attribute(name="Dechallenge", value=True, cue=_span(text, "stopped"), source=DECH)
    events = (
        _event(text, "after", effect="Rash", drug="Tylenol", treatment="Tylenol"),
        _event(text, "after", effect="rash", drug="paracetamol", treatment="paracetamol", attrs=(neg,), at=20),
        _event(text, "resolved", effect="The rash", drug="paracetamol", treatment="paracetamol", attrs=(dech,), at=47),
    )
    item = SentenceEvents(id="p", text=text, events=events)
    assert record_pairs(item) == [
        Pair(drug="acetaminophen", drug_text="Tylenol", reaction="rash", reaction_text="Rash", event_type=ADE,
             negated=False, dechallenge=True, evidence=((0, 19), (20, 46), (47, 95))),
    ]
    assert reaction_key(" The  Neutrophil\nCount ") == "neutrophil count"


def test_a_pair_needs_a_product_and_a_reaction() -> None:
    """Fresh-user QA on BC5CDR: "a significant decrease in nigral GAD activity" was cut into
    the Effects "a" and "decrease ..." (6293644), and "human" was a drug; neither is a pair."""
    text = "Calcitonin caused a significant decrease in GAD activity in human and placebo subjects."
    events = (
        _event(text, "caused", effect="a", drug="Calcitonin", treatment="Calcitonin"),
        _event(text, "caused", effect="decrease in GAD activity", drug="Calcitonin", treatment="Calcitonin"),
        _event(text, "caused", effect="decrease in GAD activity", drug="human", treatment="human"),
        _event(text, "caused", effect="decrease in GAD activity", drug="placebo", treatment="placebo"),
    )
    pairs = record_pairs(SentenceEvents(id="q", text=text, events=events))
    assert [(p.drug, p.drug_text, p.reaction) for p in pairs] == [
        ("calcitonin", "Calcitonin", "decrease in gad activity")]


def test_a_long_record_is_read_in_linear_work() -> None:
    parts, events, sentences, pos = [], [], [], 0
    for i in range(4000):
        part = "Clozapine was given. " if i % 2 == 0 else f"The patient developed rash{i} and the drug was stopped. "
        parts.append(part)
        sentences.append((pos, pos + len(part) - 1))
        pos += len(part)
    text = "".join(parts)
    for i, (s, _) in enumerate(sentences):
        if i % 2:
            events.append(_event(text, "developed", effect=f"rash{i} ", at=s))
    t0 = time.perf_counter()
    out = resolve_record(text, sentences, events)
    pairs = record_pairs(SentenceEvents(id="long", text=text, events=tuple(out)))
    assert len(pairs) == 2000 and all(p.drug == "clozapine" for p in pairs)
    assert time.perf_counter() - t0 < 30  # about 1 s here; quadratic work would take minutes



def test_cli_listing_shows_resolved_drugs_and_pairs(cli, tmp_path) -> None:
    """The listing says where a drug was resolved from and gives the record's pairs."""
    src = tmp_path / "abs.jsonl"
    src.write_text(json.dumps({"id": "1", "text": CLOZAPINE}) + "\n", encoding="utf-8")
    res = cli("pv", "extract", "-i", src)
    assert res.code == 0, res.stderr
    assert "     Treatment  'Clozapine' [0:9] (from sentence 0, rule:record.drug.missing)" in res.stdout
    assert res.stdout.rstrip().endswith(
        "  pairs:\n     ADE clozapine -> agranulocytosis (dechallenge)  sentences [0:49], [50:94], [95:153]")


def test_the_one_described_patient_is_the_subject_of_later_events() -> None:
    """Issue 23 item 1: an event may take its subject from another sentence."""
    item = extracted(CLOZAPINE)
    recovered = item.events[-1]
    (subj,) = recovered.main("Subject")
    assert (subj.span.text, subj.span.start, subj.source, subj.from_sentence) == (
        "A 34-year-old man", 50, "rule:record.subject.single_patient", 1)
    assert [(a.role, a.span.text) for a in recovered.sub_arguments["Subject"]] == [
        ("Age", "34-year-old"), ("Gender", "man")]


def test_two_described_patients_give_no_subject() -> None:
    from clinex.pv.record import _resolve_subjects

    text = "A 34-year-old man developed rash. A 50-year-old woman developed fever. The rash resolved."
    item = extracted(text)
    starts = [0, 34, 70]
    assert _resolve_subjects(text, starts, list(item.events)) == list(item.events)
