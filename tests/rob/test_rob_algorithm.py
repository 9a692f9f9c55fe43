"""RoB 2 algorithms: every branch of every domain's decision diagram, and the overall rule.

Expected values are read off the decision diagrams of the RoB 2 guidance (22 Aug 2019).
"""

from __future__ import annotations

import pytest

from clinex.errors import SchemaError
from clinex.rob.algorithm import (
    all_domain_risks,
    applicable_questions,
    domain_risk,
    is_applicable,
    overall_judgement,
    overall_risk,
)
from clinex.rob.types import SQAnswer


def _a(spec: str) -> dict[str, str]:
    """'1.1=Y 1.2=PN' -> {'1.1': 'Y', '1.2': 'PN'}."""
    return dict(item.split("=") for item in spec.split())


D1_CASES = [
    # 1.2 Y/PY -> 1.1 Y/PY/NI -> 1.3 N/PN/NI: Low
    ("1.1=Y 1.2=Y 1.3=N", "Low"),
    ("1.1=NI 1.2=PY 1.3=NI", "Low"),
    ("1.1=PY 1.2=Y 1.3=PN", "Low"),
    # 1.2 Y/PY -> 1.1 Y/PY/NI -> 1.3 Y/PY: Some concerns
    ("1.1=Y 1.2=Y 1.3=PY", "Some concerns"),
    # 1.2 Y/PY -> 1.1 N/PN: Some concerns whatever 1.3 says
    ("1.1=N 1.2=Y 1.3=N", "Some concerns"),
    ("1.1=PN 1.2=PY 1.3=Y", "Some concerns"),
    # 1.2 NI -> 1.3 N/PN/NI: Some concerns; 1.3 Y/PY: High
    ("1.1=Y 1.2=NI 1.3=N", "Some concerns"),
    ("1.1=Y 1.2=NI 1.3=NI", "Some concerns"),
    ("1.1=Y 1.2=NI 1.3=PY", "High"),
    # 1.2 N/PN: High
    ("1.1=Y 1.2=N 1.3=N", "High"),
    ("1.1=Y 1.2=PN 1.3=NI", "High"),
]

D2_CASES = [
    # part 1 Low (both unaware) and part 2 Low
    ("2.1=N 2.2=PN 2.6=Y", "Low"),
    # aware, 2.3 N/PN -> part 1 Low
    ("2.1=Y 2.2=N 2.3=N 2.6=PY", "Low"),
    ("2.1=N 2.2=NI 2.3=PN 2.6=Y", "Low"),
    # 2.3 NI -> Some concerns
    ("2.1=Y 2.2=Y 2.3=NI 2.6=Y", "Some concerns"),
    # 2.3 Y/PY -> 2.4 N/PN -> Some concerns
    ("2.1=Y 2.2=Y 2.3=Y 2.4=PN 2.6=Y", "Some concerns"),
    # 2.4 Y/PY/NI -> 2.5 Y/PY -> Some concerns
    ("2.1=Y 2.2=Y 2.3=PY 2.4=Y 2.5=PY 2.6=Y", "Some concerns"),
    ("2.1=Y 2.2=Y 2.3=PY 2.4=NI 2.5=Y 2.6=Y", "Some concerns"),
    # 2.5 N/PN/NI -> High
    ("2.1=Y 2.2=Y 2.3=Y 2.4=Y 2.5=N 2.6=Y", "High"),
    ("2.1=Y 2.2=Y 2.3=Y 2.4=PY 2.5=NI 2.6=Y", "High"),
    # part 2: 2.6 N/PN/NI -> 2.7 N/PN: Some concerns; 2.7 Y/PY/NI: High
    ("2.1=N 2.2=N 2.6=N 2.7=N", "Some concerns"),
    ("2.1=N 2.2=N 2.6=NI 2.7=PN", "Some concerns"),
    ("2.1=N 2.2=N 2.6=PN 2.7=Y", "High"),
    ("2.1=N 2.2=N 2.6=N 2.7=NI", "High"),
    # combination: Some concerns + Some concerns -> Some concerns; Some concerns + High -> High
    ("2.1=Y 2.2=Y 2.3=NI 2.6=N 2.7=N", "Some concerns"),
    ("2.1=Y 2.2=Y 2.3=NI 2.6=N 2.7=Y", "High"),
    ("2.1=Y 2.2=Y 2.3=Y 2.4=Y 2.5=N 2.6=N 2.7=N", "High"),
]

D3_CASES = [
    ("3.1=Y", "Low"),
    ("3.1=PY", "Low"),
    ("3.1=N 3.2=Y", "Low"),
    ("3.1=NI 3.2=PY", "Low"),
    ("3.1=N 3.2=N 3.3=N", "Low"),
    ("3.1=PN 3.2=PN 3.3=PN", "Low"),
    ("3.1=N 3.2=N 3.3=Y 3.4=N", "Some concerns"),
    ("3.1=N 3.2=N 3.3=NI 3.4=PN", "Some concerns"),
    ("3.1=N 3.2=N 3.3=PY 3.4=Y", "High"),
    ("3.1=N 3.2=N 3.3=Y 3.4=NI", "High"),
    # NI to 3.2 (not offered by the template) follows the N/PN branch
    ("3.1=NI 3.2=NI 3.3=N", "Low"),
    ("3.1=NI 3.2=NI 3.3=Y 3.4=Y", "High"),
]

D4_CASES = [
    ("4.1=Y", "High"),
    ("4.1=PY 4.2=N", "High"),
    ("4.1=N 4.2=Y", "High"),
    ("4.1=NI 4.2=PY", "High"),
    # 4.2 N/PN branch
    ("4.1=N 4.2=N 4.3=N", "Low"),
    ("4.1=NI 4.2=PN 4.3=PN", "Low"),
    ("4.1=N 4.2=N 4.3=Y 4.4=N", "Low"),
    ("4.1=N 4.2=N 4.3=NI 4.4=PN", "Low"),
    ("4.1=N 4.2=N 4.3=Y 4.4=Y 4.5=N", "Some concerns"),
    ("4.1=N 4.2=N 4.3=Y 4.4=NI 4.5=PN", "Some concerns"),
    ("4.1=N 4.2=N 4.3=Y 4.4=Y 4.5=Y", "High"),
    ("4.1=N 4.2=N 4.3=PY 4.4=PY 4.5=NI", "High"),
    # 4.2 NI branch: Low becomes Some concerns
    ("4.1=N 4.2=NI 4.3=N", "Some concerns"),
    ("4.1=N 4.2=NI 4.3=Y 4.4=N", "Some concerns"),
    ("4.1=N 4.2=NI 4.3=Y 4.4=Y 4.5=N", "Some concerns"),
    ("4.1=N 4.2=NI 4.3=NI 4.4=NI 4.5=PY", "High"),
]

D5_CASES = [
    ("5.1=Y 5.2=N 5.3=N", "Low"),
    ("5.1=PY 5.2=PN 5.3=N", "Low"),
    ("5.1=N 5.2=N 5.3=N", "Some concerns"),
    ("5.1=NI 5.2=N 5.3=PN", "Some concerns"),
    ("5.1=Y 5.2=NI 5.3=N", "Some concerns"),
    ("5.1=Y 5.2=N 5.3=NI", "Some concerns"),
    ("5.1=Y 5.2=Y 5.3=N", "High"),
    ("5.1=Y 5.2=NI 5.3=PY", "High"),
    ("5.1=N 5.2=PY 5.3=PY", "High"),
]


@pytest.mark.parametrize(
    ("domain", "spec", "expected"),
    [("D1", s, e) for s, e in D1_CASES]
    + [("D2", s, e) for s, e in D2_CASES]
    + [("D3", s, e) for s, e in D3_CASES]
    + [("D4", s, e) for s, e in D4_CASES]
    + [("D5", s, e) for s, e in D5_CASES],
)
def test_domain_branches(domain, spec, expected):
    assert domain_risk(domain, _a(spec)) == expected


def test_missing_or_na_answer_reads_as_ni_unless_strict():
    # 1.2 missing -> NI branch; 1.3 Y -> High
    assert domain_risk("D1", {"1.1": "Y", "1.3": "Y"}) == "High"
    assert domain_risk("D1", {"1.1": "Y", "1.2": "NA", "1.3": "N"}) == "Some concerns"
    with pytest.raises(SchemaError, match="SQ 1.2"):
        domain_risk("D1", {"1.1": "Y", "1.3": "Y"}, strict=True)
    # strict does not ask for questions the path skips
    assert domain_risk("D3", {"3.1": "Y"}, strict=True) == "Low"


def test_accepts_long_spellings_sqanswers_and_other_domains():
    answers = {
        "1.1": "Yes",
        "1.2": SQAnswer(sq="1.2", response="PY", confidence=0.7),
        "1.3": "No information",
        "5.1": "Y",  # other domains are ignored
    }
    assert domain_risk("D1", answers) == "Low"


def test_bad_inputs_raise_schema_errors():
    with pytest.raises(SchemaError, match="unknown domain"):
        domain_risk("D9", {})
    with pytest.raises(SchemaError, match="unknown signalling question '1.9'"):
        domain_risk("D1", {"1.9": "Y"})
    with pytest.raises(SchemaError, match="field '1.1'"):
        domain_risk("D1", {"1.1": "sure"})
    with pytest.raises(SchemaError, match="two different answers"):
        domain_risk("D1", {"1.1": "Y", "1_1": "N"})


def test_all_domain_risks_for_a_complete_answer_set():
    answers = _a(
        "1.1=Y 1.2=Y 1.3=N 2.1=Y 2.2=Y 2.3=NI 2.4=NA 2.5=NA 2.6=Y 2.7=NA "
        "3.1=N 3.2=N 3.3=Y 3.4=Y 4.1=N 4.2=N 4.3=N 4.4=NA 4.5=NA 5.1=Y 5.2=N 5.3=N"
    )
    risks = all_domain_risks(answers)
    assert risks == {"D1": "Low", "D2": "Some concerns", "D3": "High", "D4": "Low", "D5": "Low"}
    assert overall_risk(risks) == "High"


@pytest.mark.parametrize(
    ("risks", "kwargs", "expected"),
    [
        (["Low"] * 5, {}, "Low"),
        (["Low", "Some concerns", "Low", "Low", "Low"], {}, "Some concerns"),
        (["Some concerns"] * 4 + ["Low"], {}, "Some concerns"),
        (["Low", "Low", "High", "Low", "Low"], {}, "High"),
        (["Some concerns", "High", "Low", "Low", "Low"], {}, "High"),
        # optional judgement: multiple Some concerns -> High
        (["Some concerns", "Some concerns", "Low", "Low", "Low"], {"multiple_some_concerns_high": 2}, "High"),
        (["Some concerns", "Some concerns", "Low", "Low", "Low"], {"multiple_some_concerns_high": 3}, "Some concerns"),
        (["Some concerns", "Low", "Low", "Low", "Low"], {"multiple_some_concerns_high": 2}, "Some concerns"),
        (["Low"] * 5, {"multiple_some_concerns_high": 2}, "Low"),
    ],
)  # fmt: skip
def test_overall_rule(risks, kwargs, expected):
    assert overall_risk(risks, **kwargs) == expected


def test_overall_rule_inputs():
    assert overall_risk({"D1": "Low", "D2": "High"}) == "High"
    with pytest.raises(SchemaError, match="no domain judgements"):
        overall_risk([])
    with pytest.raises(SchemaError, match="unknown risk level 'Unclear'"):
        overall_risk(["Low", "Unclear"])
    with pytest.raises(SchemaError, match="unknown domain"):
        overall_risk({"D7": "Low"})
    with pytest.raises(SchemaError, match=">= 2"):
        overall_risk(["Low"], multiple_some_concerns_high=1)


def test_applicability_follows_the_conditions():
    assert not is_applicable("2.3", _a("2.1=N 2.2=PN"))
    assert is_applicable("2.3", _a("2.1=N 2.2=NI"))
    # 2.4 needs Y/PY to 2.3 (NI does not open it)
    assert not is_applicable("2.4", _a("2.1=Y 2.3=NI"))
    # chained: 2.5 is not asked when 2.3 itself is not asked, whatever 2.4 says
    assert not is_applicable("2.5", _a("2.1=N 2.2=N 2.3=Y 2.4=Y"))
    assert applicable_questions("D2", _a("2.1=Y 2.2=N 2.3=Y 2.4=NI 2.6=Y")) == (
        "2.1", "2.2", "2.3", "2.4", "2.5", "2.6",
    )  # fmt: skip
    # 4.3 needs N/PN/NI to both 4.1 and 4.2
    assert applicable_questions("D4", _a("4.1=N 4.2=Y")) == ("4.1", "4.2")
    assert applicable_questions("D4", _a("4.1=NI 4.2=N 4.3=N")) == ("4.1", "4.2", "4.3")
    assert applicable_questions("D3", _a("3.1=Y")) == ("3.1",)
    assert applicable_questions("D3", _a("3.1=N 3.2=NI 3.3=PY")) == ("3.1", "3.2", "3.3", "3.4")
    assert applicable_questions("D5", {}) == ("5.1", "5.2", "5.3")


def test_na_on_unasked_questions_never_changes_a_domain_judgement():
    # Exhaustive over D1, D3, D5 and a seeded sample of D2/D4: setting NA on every
    # question whose condition is not met leaves the judgement unchanged, and the
    # strict algorithm then never asks for an NA question (paths and conditions agree).
    import itertools
    import random

    from clinex.rob.schema import DOMAINS

    responses = ("Y", "PY", "PN", "N", "NI")
    rng = random.Random(5)
    for d in DOMAINS:
        combos = list(itertools.product(responses, repeat=len(d.questions)))
        if len(combos) > 4000:
            combos = rng.sample(combos, 4000)
        for combo in combos:
            answers = dict(zip(d.questions, combo))
            asked = set(applicable_questions(d.id, answers))
            marked = {q: (r if q in asked else "NA") for q, r in answers.items()}
            assert domain_risk(d.id, marked, strict=True) == domain_risk(d.id, answers), (d.id, combo)


def test_overall_judgement_names_the_rule_that_raised_it():
    risks = {"D1": "Some concerns", "D2": "Low", "D3": "Some concerns", "D4": "Low", "D5": "Some concerns"}
    assert overall_judgement(risks, multiple_some_concerns_high=3) == (
        "High",
        "raised to High: 3 domains with Some concerns (D1, D3, D5), at least 3 asked for "
        "(--multiple-some-concerns-high 3; RoB 2: some concerns in multiple domains may lower confidence "
        "in the result substantially; Sterne et al., BMJ 2019, table 2)",
    )
    # the plain rule decides: no note, also when the threshold is not reached or a domain is High
    assert overall_judgement(risks) == ("Some concerns", None)
    assert overall_judgement(risks, multiple_some_concerns_high=4) == ("Some concerns", None)
    assert overall_judgement({**risks, "D2": "High"}, multiple_some_concerns_high=2) == ("High", None)
    # an iterable is read as D1, D2 ... in order
    assert overall_judgement(["Low", "Some concerns", "Some concerns"], multiple_some_concerns_high=2)[1].startswith(
        "raised to High: 2 domains with Some concerns (D2, D3), at least 2 asked for"
    )
