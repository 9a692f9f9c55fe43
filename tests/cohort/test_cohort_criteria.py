"""Criterion files: the 13 packaged ones, validation errors, and the docs' worked example."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clinex.cohort.criteria import AtLeast, Criterion, builtin_criteria_files, load_criteria, load_criterion
from clinex.cohort.criteria_names import N2C2_CRITERIA
from clinex.cohort.types import Patient, Record
from clinex.errors import InputError, SchemaError

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "cohort.md"


def test_n2c2_set_has_the_13_criteria_in_order() -> None:
    crits = load_criteria("n2c2")
    assert [c.name for c in crits] == list(N2C2_CRITERIA)
    assert len(builtin_criteria_files("n2c2")) == 13
    for c in crits:
        assert c.source is not None and c.source.endswith(".yaml")
        assert c.references, f"{c.name} cites no reference"


def test_advanced_cad_is_at_least_two_of_four() -> None:
    cad = {c.name: c for c in load_criteria("n2c2")}["ADVANCED-CAD"]
    assert isinstance(cad.rule, AtLeast)
    assert cad.rule.at_least == 2
    assert cad.rule.of == ["cad_meds", "mi_history", "angina", "ischemia"]
    assert cad.concepts["cad_meds"].distinct == 2


def test_defaults_for_met_by_default_criteria() -> None:
    by = {c.name: c for c in load_criteria("n2c2")}
    assert (by["ENGLISH"].when_true, by["ENGLISH"].otherwise) == ("not met", "met")
    assert (by["HBA1C"].when_true, by["HBA1C"].otherwise) == ("met", "not met")
    assert by["MI-6MOS"].concepts["mi"].window_days == 183
    assert by["KETO-1YR"].concepts["dka"].window_days == 365
    assert by["DIETSUPP-2MOS"].concepts["supplement"].window_days == 61


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize(
    ("body", "field", "needle"),
    [
        ("name: X\nlabs:\n  egfr:\n    names: [egfr]\n    unit: u\n    plausible: [1, 2]\n    below: low\nrule: egfr\n", "labs.egfr.below", "valid number"),
        ("name: X\nconcepts:\n  a:\n    phrases: [x]\n    window_days: -3\nrule: a\n", "concepts.a.window_days", "greater than or equal to 1"),
        ("name: X\nconcepts:\n  a:\n    phrases: [x]\n    colour: red\nrule: a\n", "concepts.a.colour", "Extra inputs"),
        ("name: X\nconcepts:\n  a:\n    phrases: [x]\n    exclude_modifiers: [NEGATED]\nrule: a\n", "concepts.a.exclude_modifiers.0", "NEGATED_EXISTENCE"),
        ("name: X\nconcepts:\n  a:\n    phrases: [x]\n    exclude_context: ['(unclosed']\nrule: a\n", "concepts.a.exclude_context", "invalid regular expression"),
        ("name: X\nconcepts:\n  a:\n    phrases: [x]\nrule: b\n", None, "rule refers to 'b'"),
        ("name: X\nconcepts:\n  a:\n    phrases: [x]\nrule:\n  at_least: 3\n  of: [a]\n", "rule", "at_least=3"),
        ("concepts:\n  a:\n    phrases: [x]\nrule: a\n", "name", "Field required"),
    ],
)
def test_validation_errors_name_file_and_field(tmp_path: Path, body: str, field: str | None, needle: str) -> None:
    path = _write(tmp_path, "bad.yaml", body)
    with pytest.raises(SchemaError) as info:
        load_criterion(path)
    msg = str(info.value)
    assert msg.startswith("[CLX005] ")
    assert str(path) in msg
    if field is not None:
        assert f"field '{field}'" in msg
    assert needle in msg


def test_yaml_syntax_error_has_a_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "broken.yaml", "name: X\nconcepts:\n  a: [unclosed\nrule: a\n")
    with pytest.raises(SchemaError, match=r"broken\.yaml:\d+: invalid YAML"):
        load_criterion(path)


def test_missing_file_and_wrong_extension(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such criterion file"):
        load_criterion(tmp_path / "nope.yaml")
    with pytest.raises(InputError, match=r"\.yaml, \.yml or \.toml"):
        load_criterion(_write(tmp_path, "c.json", "{}"))


def test_unknown_set_lists_available() -> None:
    with pytest.raises(SchemaError, match="unknown criteria set 'n2c3'; available: n2c2"):
        load_criteria("n2c3")


def test_duplicate_names_are_refused(tmp_path: Path) -> None:
    body = "name: DUP\nconcepts:\n  a:\n    phrases: [x]\nrule: a\n"
    a, b = _write(tmp_path, "a.yaml", body), _write(tmp_path, "b.yaml", body)
    with pytest.raises(SchemaError, match="also defined in"):
        load_criteria([a, b])


def test_toml_file_loads(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "c.toml",
        'name = "SMOKER"\nrule = "smoke"\n[concepts.smoke]\nphrases = ["current smoker", "smokes"]\n',
    )
    c = load_criterion(path)
    assert isinstance(c, Criterion)
    assert c.concepts["smoke"].term_map() == {"current smoker": "current smoker", "smokes": "smokes"}


def _docs_example() -> str:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Writing your own criterion", 1)[1]
    m = re.search(r"```yaml\n(name: EGFR-LT60-1YR\n.*?)```", section, re.S)
    assert m, "the eGFR worked example is missing from docs/cohort.md"
    return m.group(1)


def _patient(records: list[tuple[str, str]]) -> Patient:
    text, recs = "", []
    for date, body in records:
        chunk = f"Record date: {date}\n\n{body}\n"
        import datetime as dt

        recs.append(Record(date=dt.date.fromisoformat(date), start=len(text), end=len(text) + len(chunk)))
        text += chunk + "*" * 100 + "\n"
    return Patient(id="egfr", text=text, records=tuple(recs))


def test_docs_example_runs(tmp_path: Path) -> None:
    from clinex.cohort import screen

    path = _write(tmp_path, "egfr.yaml", _docs_example())
    crit = load_criterion(path)
    assert crit.name == "EGFR-LT60-1YR" and crit.labs["egfr"].below == 60

    met = _patient([("2070-06-01", "Renal: eGFR 58 mL/min/1.73m2, stable."), ("2071-03-01", "eGFR 72 today.")])
    d = screen(met, criteria=[path])["EGFR-LT60-1YR"]
    assert d.label == "met"
    (ev,) = d.evidence
    assert ev.value == 58.0 and ev.record_date.isoformat() == "2070-06-01"
    assert met.text[ev.span.start : ev.span.end] == "Renal: eGFR 58 mL/min/1.73m2, stable."

    # 45 is older than a year (2070-01-10 -> 2071-03-01 is 415 days); >60 and goals are not values
    old = _patient([("2070-01-10", "eGFR 45."), ("2071-03-01", "eGFR >60. Goal eGFR 60 or more.")])
    assert screen(old, criteria=[path])["EGFR-LT60-1YR"].label == "not met"


def test_cli_lists_and_validates(cli, tmp_path: Path) -> None:
    r = cli("cohort", "criteria")
    assert r.code == 0
    assert "13 criteria" in r.stdout and "ADVANCED-CAD" in r.stdout and "183" in r.stdout
    bad = _write(tmp_path, "bad.yaml", "name: X\nconcepts:\n  a:\n    phrases: [x]\n    window_days: soon\nrule: a\n")
    r = cli("cohort", "criteria", str(bad))
    assert r.code == 2
    assert "[CLX005]" in r.stderr and "bad.yaml" in r.stderr and "field 'concepts.a.window_days'" in r.stderr


def test_quantity_spec(tmp_path: Path) -> None:
    alc = {c.name: c for c in load_criteria("n2c2")}["ALCOHOL-ABUSE"].concepts["abuse"]
    assert alc.quantity is not None
    assert (alc.quantity.above, alc.quantity.above_female) == (14, 7)
    assert alc.quantity.units["bottle of wine"] == 5
    assert alc.term_map()["beers"] == "<amount>"
    bad = _write(
        tmp_path, "q.yaml",
        "name: Q\nconcepts:\n  a:\n    quantity:\n      units: {cups: 1}\n      per_week: {'(daily': 7}\n      above: 3\nrule: a\n",
    )
    with pytest.raises(SchemaError, match=r"field 'concepts\.a\.quantity\.per_week'.*invalid regular expression"):
        load_criterion(bad)


def test_own_quantity_criterion_runs(tmp_path: Path) -> None:
    from clinex.cohort import screen

    path = _write(
        tmp_path, "coffee.yaml",
        "name: HEAVY-COFFEE\nconcepts:\n  coffee:\n    quantity:\n      units: {cups of coffee: 1, mugs of coffee: 2}\n"
        "      per_week: {'\\bdaily\\b|a day': 7}\n      above: 28\n    resolve: latest\nrule: coffee\n",
    )
    heavy = _patient([("2070-01-01", "Drinks 3 mugs of coffee a day.")])
    light = _patient([("2070-01-01", "Drinks 3 mugs of coffee a day."), ("2070-05-01", "Now 2 cups of coffee daily.")])
    assert screen(heavy, criteria=[path])["HEAVY-COFFEE"].label == "met"  # 3 x 2 x 7 = 42 > 28
    assert screen(light, criteria=[path])["HEAVY-COFFEE"].label == "not met"  # latest: 14 per week


def test_every_validation_error_is_listed_with_its_field(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.yaml", "name: X\nlabs:\n  egfr:\n    names: [egfr]\n    below: sixty\nrule: egfr\n")
    with pytest.raises(SchemaError) as info:
        load_criterion(path)
    assert str(info.value) == (
        f"[CLX005] {path}: 3 errors:\n"
        "  field 'labs.egfr.unit': Field required\n"
        "  field 'labs.egfr.plausible': Field required\n"
        "  field 'labs.egfr.below': Input should be a valid number, unable to parse string as a number (got 'sixty')"
    )
    # a wrong rule is one error, not one per rule form
    path2 = _write(tmp_path, "bad2.yaml", "name: X\nconcepts:\n  a:\n    phrases: [x]\n    colour: red\nrule:\n  at_least: 3\n  of: [a]\n")
    with pytest.raises(SchemaError) as info:
        load_criterion(path2)
    lines = str(info.value).splitlines()
    assert lines[0] == f"[CLX005] {path2}: 2 errors:"
    assert lines[1] == "  field 'concepts.a.colour': Extra inputs are not permitted (got 'red')"
    assert lines[2].startswith("  field 'rule': Value error, at_least=3 but only 1 items in 'of'")
