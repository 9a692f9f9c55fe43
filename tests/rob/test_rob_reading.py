"""The reading list: sentences a reviewer reads beside the deciding evidence (clinex.rob.reading.v1)."""

from __future__ import annotations

from clinex.rob.assess import assess
from clinex.rob.evidence.reading import load_reading_list, reading_evidence
from clinex.rob.evidence.reasoning.model import RulesEvidenceModel
from clinex.text import Document

REPORT = (
    "Methods\n"
    "Participants were randomised with a computer-generated list in permuted blocks of four.\n"
    "The study was approved by the ethics committee of the university hospital.\n"
    "Continuous outcomes were compared with analysis of covariance adjusted for centre.\n"
    "All analyses used Stata version 14.\n\n"
    "Results\n"
    "In all, 120 patients were randomised and 114 completed the trial.\n"
    "Four patients withdrew consent and two were lost to follow-up.\n"
)


def test_reading_list_topics_sections_and_exclusions() -> None:
    rl = load_reading_list()
    assert (rl.name, rl.score, rl.max_per_sq) == ("clinex.rob.reading.v1", 0.3, 4)
    assert [t.name for t in rl.topics] == ["sequence", "concealment", "blinding", "analysis", "flow",
                                           "registration"]
    model = RulesEvidenceModel()
    sentences = model._sentences(Document(id="t", text=REPORT))
    listed = reading_evidence(sentences)
    texts = {sq: [s.text for s, _ in v] for sq, v in listed.items()}
    # the statistical-methods sentences for 2.6 (not the ethics approval, never listed)
    assert texts["2.6"] == ["Continuous outcomes were compared with analysis of covariance adjusted for centre.",
                            "All analyses used Stata version 14."]
    # participant flow is read in Results only
    assert texts["3.1"] == ["In all, 120 patients were randomised and 114 completed the trial.",
                            "Four patients withdrew consent and two were lost to follow-up."]
    assert all("ethics" not in t for v in texts.values() for t in v)


def test_rules_model_cites_the_reading_list_after_its_own_evidence() -> None:
    a = {x.sq: x for d in assess(Document(id="t", text=REPORT), RulesEvidenceModel()).domains for x in d.answers}
    srcs = [e.source for e in a["2.6"].evidence]
    assert srcs[-2:] == ["clinex.rob.reading.v1:2.6/analysis"] * 2
    assert all(e.score == 0.3 for e in a["2.6"].evidence if e.source.startswith("clinex.rob.reading"))
    # the deciding evidence stays first, and no sentence is cited twice
    spans = [(e.span.start, e.span.end) for e in a["3.1"].evidence]
    assert len(spans) == len(set(spans)) and a["3.1"].evidence[0].source.startswith("clinex.rob.rules.v1:3.1/")
    # reading=False: deciding evidence only
    b = {x.sq: x for d in assess(Document(id="t", text=REPORT), RulesEvidenceModel(reading=False)).domains
         for x in d.answers}
    assert not any(e.source.startswith("clinex.rob.reading") for x in b.values() for e in x.evidence)
    assert a["3.1"].response == b["3.1"].response == "Y"


def test_saved_rules_settings_load_back(tmp_path) -> None:
    """``RulesEvidenceModel.save`` writes ``kind: rules``; loading it used to fail with
    "model kind 'rules' is not 'cues'" (issue 24)."""
    import pytest

    from clinex.errors import ModelError
    from clinex.rob.evidence import load_evidence_model

    path = RulesEvidenceModel(max_evidence=3, reading=False).save(tmp_path / "rules.yaml")
    m = load_evidence_model(path)
    assert (type(m).__name__, m.max_evidence, m.reading, m.name) == (
        "RulesEvidenceModel", 3, False, "clinex.rob.rules.v1")
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: rules\nname: clinex.rob.rules.v0\n", encoding="utf-8")
    with pytest.raises(ModelError, match=r"field 'name': rules 'clinex.rob.rules.v0' are not the installed"):
        load_evidence_model(bad)
    bad.write_text("kind: rules\nmax_evidence: 0\n", encoding="utf-8")
    with pytest.raises(ModelError, match="bad setting"):
        load_evidence_model(bad)
