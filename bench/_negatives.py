"""Shared by bench/pv.py and bench/pv_neural.py: the sentence-level figures of issue 9.

On the held-out ``test`` part of the ADE-corpus negatives (:func:`clinex.pv.gate.split_negatives`:
sentences of abstracts whose PubMed id falls in the 20 % never trained or calibrated on):
the share given an Adverse_event; and on a mix of those with PHEE dev, sentence-level ADE
precision, recall and F1 (:func:`clinex.pv.gate.gate_report`). Predictions go through
:func:`clinex.pv.pipeline.extract_records`, the path of ``clinex pv extract``.
"""

from __future__ import annotations

from pathlib import Path


def default_negatives() -> Path:
    """``../shared/data/ade_corpus/ADE-NEG.txt`` beside this checkout."""
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "ade_corpus" / "ADE-NEG.txt"


def negatives_figures(model, gold_dev: list, pred_dev: list, path: Path | None) -> dict:  # noqa: ANN001
    """The figures as a flat dict with keys ``negatives.*``; ``{}`` when the file is missing.

    The ``asserted`` share counts only Adverse_events without a Negated attribute (an
    event PHEE marks as explicitly absent, "did not develop neutropenia").
    """
    from clinex.io.ade_corpus import read_ade_negatives
    from clinex.pv.gate import event_share, gate_report, split_negatives
    from clinex.pv.pipeline import extract_records
    from clinex.pv.postprocess import is_negated

    path = path or default_negatives()
    if not path.is_file():
        print(f"no negatives file at {path}; pass --negatives PATH for the sentence-level figures")
        return {}
    test = split_negatives(read_ade_negatives(path))["test"]
    preds = []
    for b in range(0, len(test), 256):
        preds += extract_records([(f"{n.pmid}_{n.line}", n.text) for n in test[b : b + 256]], model=model)
    report = gate_report(gold_dev, pred_dev, preds)
    asserted = [p.model_copy(update={"events": tuple(e for e in p.events if not is_negated(e))}) for p in preds]
    report["negatives_asserted_ade_share"] = round(event_share(asserted), 4)
    out = {f"negatives.{k}": v for k, v in report.items()}
    print(
        f"held-out ADE-corpus negatives ({len(test)} sentences): {report['negatives_ade_share']:.1%} given an "
        f"Adverse_event ({report['negatives_asserted_ade_share']:.1%} not negated); mix with PHEE dev: "
        f"sentence-level ADE P {report['mix_ade_precision']:.3f} R {report['mix_ade_recall']:.3f} "
        f"F1 {report['mix_ade_f1']:.3f}"
    )
    return out
