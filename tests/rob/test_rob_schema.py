"""RoB 2 schema: domains, the 22 signalling questions, response helpers."""

from __future__ import annotations

import pytest

from clinex.errors import SchemaError
from clinex.rob import schema
from clinex.rob.schema import (
    DOMAINS,
    SIGNALLING_QUESTIONS,
    SQ_IDS,
    fold_response,
    is_no,
    is_yes,
    judgement_for,
    parse_label,
    parse_response,
    questions_of,
    sq,
)


def test_five_domains_with_official_names_and_question_ranges():
    assert [d.id for d in DOMAINS] == ["D1", "D2", "D3", "D4", "D5"]
    assert [d.name for d in DOMAINS] == [
        "Bias arising from the randomization process",
        "Bias due to deviations from intended interventions",
        "Bias due to missing outcome data",
        "Bias in measurement of the outcome",
        "Bias in selection of the reported result",
    ]
    assert [len(d.questions) for d in DOMAINS] == [3, 7, 4, 5, 3]


def test_22_questions_in_order_each_in_its_domain():
    assert len(SIGNALLING_QUESTIONS) == 22
    assert SQ_IDS == (
        "1.1", "1.2", "1.3",
        "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7",
        "3.1", "3.2", "3.3", "3.4",
        "4.1", "4.2", "4.3", "4.4", "4.5",
        "5.1", "5.2", "5.3",
    )  # fmt: skip
    for q in SIGNALLING_QUESTIONS:
        assert q.domain == "D" + q.id[0]
        assert q.text.endswith("?")
    for d in DOMAINS:
        assert tuple(q.id for q in questions_of(d.id)) == d.questions


def test_official_wording_and_conditions():
    assert sq("1.1").text == "Was the allocation sequence random?"
    assert sq("2.6").text == (
        "Was an appropriate analysis used to estimate the effect of assignment to intervention?"
    )
    assert sq("2.3").full_text == (
        "If Y/PY/NI to 2.1 or 2.2: Were there deviations from the intended intervention "
        "that arose because of the trial context?"
    )
    assert sq("4.3").condition.text() == "If N/PN/NI to 4.1 and 4.2"
    assert sq("5.3").text.endswith("from multiple eligible analyses of the data?")
    conditional = {q.id for q in SIGNALLING_QUESTIONS if q.condition is not None}
    assert conditional == {"2.3", "2.4", "2.5", "2.7", "3.2", "3.3", "3.4", "4.3", "4.4", "4.5"}
    # the template offers NA only for conditional questions, and no NI for 3.2
    assert all(("NA" in q.options) == (q.id in conditional) for q in SIGNALLING_QUESTIONS)
    assert "NI" not in sq("3.2").options


def test_sq_lookup_accepts_tagtog_spelling_and_lists_valid_ids():
    assert sq("3_4").id == "3.4"
    with pytest.raises(SchemaError) as err:
        sq("6.1")
    assert "CLX005" in str(err.value) and "1.1, 1.2" in str(err.value) and "5.3" in str(err.value)
    with pytest.raises(SchemaError, match="D1, D2, D3, D4, D5"):
        schema.domain("D6")
    assert schema.domain("2").id == "D2"


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("Y", "Y"), ("yes", "Y"), ("Probably yes", "PY"), ("ProbablyYes", "PY"),
        ("probably_no", "PN"), ("No", "N"), ("No Information", "NI"), ("No_Information", "NI"),
        ("ni", "NI"), ("Not applicable", "NA"), ("NA", "NA"),
    ],
)  # fmt: skip
def test_parse_response_spellings(raw, code):
    assert parse_response(raw) == code


def test_parse_response_rejects_unknown_with_field():
    with pytest.raises(SchemaError) as err:
        parse_response("maybe", field="1.2")
    assert "field '1.2'" in str(err.value) and "Y, PY, PN, N, NI, NA" in str(err.value)


def test_fold_and_direction_helpers():
    assert [fold_response(r) for r in ("Y", "PY", "PN", "N", "NI", "NA")] == [
        "Yes", "Yes", "No", "No", "No Information", "NA",
    ]  # fmt: skip
    assert is_yes("PY") and not is_yes("NI") and is_no("PN") and not is_no("Y")


def test_judgement_follows_the_favourable_direction():
    assert judgement_for("1.1", "PY") == "Good"
    assert judgement_for("1.1", "N") == "Bad"
    assert judgement_for("1.3", "N") == "Good"
    assert judgement_for("2.1", "Y") == "Bad"
    assert judgement_for("2.5", "Y") == "Good"
    assert judgement_for("3.1", "No") == "Bad"
    assert judgement_for("5.2", "PN") == "Good"
    assert judgement_for("4.1", "NI") is None
    assert judgement_for("4.1", "NA") is None


def test_parse_robuster_labels():
    assert parse_label("1.1 Yes Good") == ("1.1", "Y", "Good")
    assert parse_label("3.1 No Bad") == ("3.1", "N", "Bad")
    assert parse_label("2.1 No Information") == ("2.1", "NI", None)
    assert parse_label("1_2_ProbablyNo_Bad") == ("1.2", "PN", "Bad")
    assert parse_label("2_1_No_Information") == ("2.1", "NI", None)
    with pytest.raises(SchemaError):
        parse_label("Yes Good")
    with pytest.raises(SchemaError):
        parse_label("1.1 Sometimes Good")
