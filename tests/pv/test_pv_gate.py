"""The sentence-level event decision (clinex.pv.gate, clinex.pv.postprocess) and the
ADE-corpus negatives reader: hand-checked values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from clinex.errors import InputError, ModelError
from clinex.io.ade_corpus import NegativeSentence, read_ade_negatives
from clinex.pv.gate import (
    GATE_FEATURES,
    SentenceGate,
    apply_gate,
    calibrate_threshold,
    event_share,
    gate_report,
    negative_part,
    sentence_counts,
    split_negatives,
)
from clinex.pv.postprocess import finish
from clinex.pv.types import Argument, Attribute, Event, SentenceEvents
from clinex.text import Span


def _event(text: str, trigger: str, etype: str = "Adverse_event", negated: str | None = None) -> Event:
    """An event with the trigger and, as its Effect, the word after it (every event needs an argument)."""
    start = text.index(trigger)
    attrs = ()
    if negated is not None:
        k = text.index(negated)
        attrs = (Attribute(name="Negated", value=True, cue=Span.from_offsets(text, (k, k + len(negated)))),)
    nxt = start + len(trigger) + 1
    end = nxt + len(text[nxt:].split(" ")[0].rstrip("."))
    effect = (Argument(role="Effect", span=Span.from_offsets(text, (nxt, end))),) if end > nxt else ()
    return Event(
        event_type=etype,
        trigger=Span.from_offsets(text, (start, start + len(trigger))),
        arguments=effect,
        attributes=attrs,
        score=0.5,
    )


# --------------------------------------------------------------------------- reader
def test_read_ade_negatives_both_line_forms(tmp_path: Path) -> None:
    f = tmp_path / "neg.txt"
    f.write_text("6460590 NEG Clioquinol was given.\n\nA plain sentence.  \n8600337 NEG  Two spaces.\n", encoding="utf-8")
    assert read_ade_negatives(f) == [
        NegativeSentence(pmid="6460590", text="Clioquinol was given.", line=1),
        NegativeSentence(pmid="line3", text="A plain sentence.", line=3),
        NegativeSentence(pmid="8600337", text=" Two spaces.", line=4),
    ]


def test_read_ade_negatives_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n", encoding="utf-8")
    with pytest.raises(InputError, match="holds no sentence") as exc:
        read_ade_negatives(empty)
    assert str(empty) in str(exc.value)
    with pytest.raises(InputError, match="no such file"):
        read_ade_negatives(tmp_path / "missing.txt")
    binary = tmp_path / "b.txt"
    binary.write_bytes(b"1 NEG a\x00b\n")
    with pytest.raises(InputError, match="NUL"):
        read_ade_negatives(binary)


def test_negative_parts_are_fixed_by_sha1_of_the_pmid() -> None:
    # sha1(pmid) mod 100: "2" -> 16 (test), "20" -> 24 (dev), "1" -> 83 (train)
    assert [negative_part(p) for p in ("2", "4", "20", "21", "1", "7")] == [
        "test", "test", "dev", "dev", "train", "train"
    ]
    negs = [NegativeSentence(pmid=p, text=f"s{p}", line=i) for i, p in enumerate(("1", "2", "20", "1"), 1)]
    parts = split_negatives(negs)
    assert {k: [n.line for n in v] for k, v in parts.items()} == {"test": [2], "dev": [3], "train": [1, 4]}


def test_split_of_the_shared_ade_corpus(shared_data: Path) -> None:
    parts = split_negatives(read_ade_negatives(shared_data / "ade_corpus" / "ADE-NEG.txt"))
    assert {k: len(v) for k, v in parts.items()} == {"test": 3199, "dev": 2159, "train": 10305}
    pmids = {k: {n.pmid for n in v} for k, v in parts.items()}
    assert not (pmids["test"] & pmids["dev"]) and not (pmids["test"] & pmids["train"])


# --------------------------------------------------------------------------- calibration
def test_calibrate_threshold_by_hand() -> None:
    probs = [0.5, 0.9, 0.7, 0.8, 0.6]
    assert calibrate_threshold(probs, 0.8) == 0.6  # keep 4 of 5
    assert calibrate_threshold(probs, 1.0) == 0.5
    assert calibrate_threshold(probs, 0.01) == 0.9  # at least one kept
    assert calibrate_threshold([0.123456], 1.0) == 0.1234  # rounded down: still kept
    assert calibrate_threshold([], 0.9) == 0.0
    with pytest.raises(ModelError, match="target_recall"):
        calibrate_threshold(probs, 0.0)


def test_sentence_counts_and_gate_report_by_hand() -> None:
    t = "Rash after amoxicillin."
    ade = SentenceEvents(id="a", text=t, events=(_event(t, "after"),))
    pte = SentenceEvents(id="b", text=t, events=(_event(t, "after", "Potential_therapeutic_event"),))
    none = SentenceEvents(id="c", text=t)
    gold = [ade, ade, pte]
    pred = [ade, none, ade]  # tp, fn, fp (PTE gold, ADE predicted)
    counts = sentence_counts(gold, pred)
    assert (counts.tp, counts.fp, counts.fn, counts.tn) == (1, 1, 1, 0)
    assert sentence_counts(gold, pred, None).tp == 2
    negs = [ade.model_copy(update={"id": "n1"}), none.model_copy(update={"id": "n2"}),
            pte.model_copy(update={"id": "n3"}), none.model_copy(update={"id": "n4"})]
    assert event_share(negs) == 0.25 and event_share(negs, None) == 0.5
    report = gate_report(gold, pred, negs)
    # mix: gold ADE a, a (tp, fn), gold PTE b (fp), negatives n1 (fp), n2, n3, n4 (tn)
    assert report == {
        "negatives": 4,
        "negatives_ade_share": 0.25,
        "negatives_event_share": 0.5,
        "mix_ade_precision": round(1 / 3, 4),
        "mix_ade_recall": 0.5,
        "mix_ade_f1": 0.4,
        "mix_ade_tp": 1,
        "mix_ade_fp": 2,
        "mix_ade_fn": 1,
        "mix_ade_tn": 3,
    }
    with pytest.raises(ModelError, match="2 gold sentences but 1"):
        sentence_counts(gold[:2], pred[:1])


# --------------------------------------------------------------------------- the gate
def _toy_gate() -> tuple[SentenceGate, list[str], list]:
    pos = [f"She developed rash {i} after amoxicillin therapy." for i in range(20)]
    neg = [f"Informed consent was obtained from patient {i}." for i in range(20)]
    gate = SentenceGate().fit_text(pos, neg)
    texts = pos[:3] + neg[:3]
    detailed = [([_event(t, "after")] if "after" in t else [], 0.9 if "after" in t else 0.1) for t in texts]
    gate.fit_stack(gate.features(texts, detailed), [True] * 3 + [False] * 3)
    return gate, texts, detailed


def test_gate_separates_toy_sentences_and_round_trips(tmp_path: Path) -> None:
    gate, texts, detailed = _toy_gate()
    probs = gate.probability(texts, detailed)
    assert min(probs[:3]) > 0.5 > max(probs[3:])
    meta = gate.save(tmp_path)
    assert meta == {"file": "gate.npz", "features": list(GATE_FEATURES), "hash_features": 2**18}
    again = SentenceGate.load(tmp_path, meta)
    assert again.probability(texts, detailed) == probs
    assert np.array_equal(again.text_coef_, gate.text_coef_)


def test_gate_load_errors(tmp_path: Path) -> None:
    gate, _, _ = _toy_gate()
    meta = gate.save(tmp_path)
    with pytest.raises(ModelError, match="other features"):
        SentenceGate.load(tmp_path, {**meta, "features": ["x"]})
    (tmp_path / "gate.npz").write_bytes(b"not a zip")
    with pytest.raises(ModelError, match="cannot read the sentence gate") as exc:
        SentenceGate.load(tmp_path, meta)
    assert "gate.npz" in str(exc.value)
    with pytest.raises(ModelError, match="with and without events"):
        SentenceGate().fit_text(["a"], [])


def test_apply_gate_and_finish_keep_confirmed_negations() -> None:
    t1 = "The patient did not develop neutropenia while on clozapine."
    t2 = "A 67-year-old man was started on amiodarone 200 mg daily."
    negated = _event(t1, "develop", negated="not")
    started = _event(t2, "started")
    raw = [([negated], 0.2), ([started], 0.2)]
    assert apply_gate(None, 0.5, [t1, t2], raw) == [([], 0.2), ([], 0.2)]
    assert apply_gate(None, 0.0, [t1, t2], raw) == [([negated], 0.2), ([started], 0.2)]
    out = finish([t1, t2], raw, threshold=0.5)
    (kept,), p = out[0]
    assert p == 0.2 and kept.trigger.text == "develop"
    assert [(a.name, a.cue.text, a.source) for a in kept.attributes] == [("Negated", "not", "model")]
    assert out[1] == ([], 0.2)
    # a "negation" that does not govern the event is no reason to keep it
    t3 = "She had no fever but developed a rash after amoxicillin."
    rash = Event(
        event_type="Adverse_event",
        trigger=Span.from_offsets(t3, (t3.index("developed"), t3.index("developed") + 9)),
        arguments=(Argument(role="Effect", span=Span.from_offsets(t3, (t3.index("a rash"), t3.index("a rash") + 6))),),
    )
    assert finish([t3], [([rash], 0.1)], threshold=0.5) == [([], 0.1)]


# --------------------------------------------------------------------------- CLI
def _small_data(shared_data: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    phee = shared_data / "phee" / "json"
    train = tmp_path / "train.json"
    dev = tmp_path / "dev.json"
    train.write_text("".join((phee / "train.json").read_text(encoding="utf-8").splitlines(True)[:40]), encoding="utf-8")
    dev.write_text("".join((phee / "dev.json").read_text(encoding="utf-8").splitlines(True)[:30]), encoding="utf-8")
    negs = tmp_path / "neg.txt"
    lines = (shared_data / "ade_corpus" / "ADE-NEG.txt").read_text(encoding="utf-8").splitlines()[:60]
    # PubMed ids "1" -> train part, "20" -> dev part, "2" -> test part (sha1 mod 100: 83, 24, 16)
    negs.write_text(
        "".join(f"{('1', '20', '2')[k % 3]} NEG {line.split(' ', 2)[2]}\n" for k, line in enumerate(lines)),
        encoding="utf-8",
    )
    return train, dev, negs


def test_pv_gate_verb_adds_a_gate_to_the_shipped_crf(cli, shared_data: Path, tmp_path: Path) -> None:  # noqa: ANN001
    train, dev, negs = _small_data(shared_data, tmp_path)
    out = tmp_path / "gated"
    res = cli("pv", "gate", "crf", "--train", train, "--dev", dev, "--negatives", negs, "--out", out,
              "--target-recall", "0.9")
    assert res.code == 0, res.stderr
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["target_recall"] == 0.9 and report["dev_sentences"] == 30
    assert report["dev_negatives"] == 20 and report["train_negatives"] == 20
    meta = json.loads((out / "model.json").read_text(encoding="utf-8"))
    assert meta["params"]["event_threshold"] == report["event_threshold"] == meta["calibration"]["event_threshold"]
    assert (out / "gate.npz").is_file()
    again = cli("pv", "gate", "crf", "--train", train, "--dev", dev, "--negatives", negs, "--out", out)
    assert again.code == 2 and "pass --force" in again.stderr
    bad = cli("pv", "gate", "crf", "--train", train, "--dev", dev, "--negatives", negs, "--out", tmp_path / "x",
              "--target-recall", "1.5")
    assert bad.code == 2 and "--target-recall must be in (0, 1]" in bad.stderr
    res = cli("pv", "extract", "--model", str(out), "Informed consent was obtained from all patients.")
    assert res.code == 0 and "(no events)" in res.stdout


def test_pv_gate_refuses_too_few_negatives(cli, shared_data: Path, tmp_path: Path) -> None:  # noqa: ANN001
    train, dev, _ = _small_data(shared_data, tmp_path)
    few = tmp_path / "few.txt"
    few.write_text("No rash was seen.\nThe patient was discharged.\n", encoding="utf-8")
    res = cli("pv", "gate", "crf", "--train", train, "--dev", dev, "--negatives", few, "--out", tmp_path / "g")
    assert res.code == 2
    assert "need at least 20 sentences in both their train and dev parts" in res.stderr
    assert not (tmp_path / "g").exists()


def test_pv_train_negatives_needs_dev(cli, shared_data: Path, tmp_path: Path) -> None:  # noqa: ANN001
    train, _, negs = _small_data(shared_data, tmp_path)
    res = cli("pv", "train", "--train", train, "--negatives", negs, "--out", tmp_path / "m")
    assert res.code == 2 and "--negatives needs --dev" in res.stderr
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    res = cli("pv", "train", "--train", train, "--dev", train, "--negatives", empty, "--out", tmp_path / "m")
    assert res.code == 2 and "holds no sentence" in res.stderr and str(empty) in res.stderr


def test_pv_train_crf_with_negatives_saves_a_calibrated_gate(cli, shared_data: Path, tmp_path: Path) -> None:  # noqa: ANN001
    train, dev, negs = _small_data(shared_data, tmp_path)
    out = tmp_path / "crf"
    res = cli("pv", "train", "--train", train, "--dev", dev, "--negatives", negs, "--out", out,
              "--max-iterations", "5", "--param", "joint_iterations=5", "--target-recall", "1.0")
    assert res.code == 0, res.stderr
    meta = json.loads((out / "model.json").read_text(encoding="utf-8"))
    assert meta["calibration"]["target_recall"] == 1.0
    from clinex.pv.formats.phee_json import read_phee_json
    from clinex.pv.models.crf import CRFModel

    model = CRFModel.load(out)
    assert model.gate_ is not None and model.event_threshold == meta["params"]["event_threshold"]
    # target 1.0 keeps every dev sentence the CRF gives an event: the recall is their share
    texts = [s.text for s in read_phee_json(dev)]
    ungated = model.predict_ungated(texts)
    with_events = sum(bool(evs) for evs, _ in ungated)
    assert meta["calibration"]["dev_recall_at_threshold"] == round(with_events / 30, 4)
    # nothing is gated away; only events without any argument are dropped (postprocess)
    with_arguments = sum(any(e.arguments or any(e.sub_arguments.values()) for e in evs) for evs, _ in ungated)
    assert sum(bool(evs) for evs, _ in model.predict_detailed(texts)) == with_arguments


def test_finish_drops_events_without_any_argument() -> None:
    t = "A severe anaphylactic reaction occurred after ceftriaxone administration."
    bare = _event(t, "after").model_copy(update={"arguments": ()})
    k = t.index("ceftriaxone")
    with_drug = bare.model_copy(
        update={"sub_arguments": {"Treatment": (Argument(role="Drug", span=Span.from_offsets(t, (k, k + 11))),)}}
    )
    ((kept,), _), = finish([t], [([bare, with_drug], 0.9)], attribute_scope=False)
    assert kept == with_drug


def test_pv_train_target_recall_needs_negatives(cli, tmp_path: Path) -> None:  # noqa: ANN001
    res = cli("pv", "train", "--train", tmp_path / "t.json", "--out", tmp_path / "m", "--target-recall", "0.9")
    assert res.code == 2 and "--target-recall applies to the sentence gate: give --negatives too" in res.stderr


#: Texts that test the analyzers' edges: empty, one-letter words, runs of white space,
#: non-ASCII letters and punctuation, a word shorter than every n-gram, a very long word.
_ODD_TEXTS = [
    "",
    "   ",
    "a",
    "I v",
    "He  developed\t\tSJS\n after   lamotrigine.",
    "Naïve patient – 5 mg/kg/día; β-blocker’s effect?",
    "x" * 40,
    "QT-prolongation (QTc 520 ms) with 5-FU",
    "日本語 テキスト mixed with English words",
]


def test_hashed_text_features_equal_scikit_learns(shared_data: Path) -> None:
    """The run-time hashed logits (no scikit-learn import) are scikit-learn's transform
    @ coef on every PHEE dev sentence and on edge-case texts, and give the same gate
    probabilities (4 decimals) as that matrix."""
    from clinex.pv.formats.phee_json import read_phee_json
    from clinex.pv.gate import _HASH_FEATURES, _text_matrix
    from clinex.pv.hashed_text import char_wb_ngrams, hashed_logits, word_ngrams
    from clinex.pv.models import load_model

    gate = load_model("auto").gate_
    texts = [s.text for s in read_phee_json(shared_data / "phee" / "json" / "dev.json")] + _ODD_TEXTS
    expected = _text_matrix(texts) @ gate.text_coef_ + gate.text_intercept_
    got = np.array(hashed_logits(texts, gate.text_coef_, gate.text_intercept_, _HASH_FEATURES))
    assert got.shape == (len(texts),)
    assert np.max(np.abs(got - expected)) < 1e-9
    assert np.array_equal(gate.text_logits(texts), got)
    # hand-checked analyzer output
    assert word_ngrams("The drug-induced  SJS") == ["the", "drug", "induced", "sjs", "the drug", "drug induced", "induced sjs"]
    assert char_wb_ngrams("I ab") == [" i ", " ab", "ab ", " ab "]
    assert word_ngrams("a b") == [] and char_wb_ngrams("") == []
    # the columns are scikit-learn's: one row of its word block, by hand
    from clinex.pv.hashed_text import hashed_indices

    grams = word_ngrams("Rash after rash")
    cols, counts = hashed_indices(grams, _HASH_FEATURES)
    row = _text_matrix(["Rash after rash"])[:, :_HASH_FEATURES]
    assert grams == ["rash", "after", "rash", "rash after", "after rash"]
    assert cols.tolist() == sorted(row.indices.tolist()) and sorted(counts.tolist()) == [1.0, 1.0, 1.0, 2.0]
    assert hashed_indices([], _HASH_FEATURES)[0].shape == (0,)
