from __future__ import annotations

import pytest

from clinex.errors import SchemaError
from clinex.pv import schema


def test_names_match_the_phee_files() -> None:
    assert schema.EVENT_TYPES == ("Adverse_event", "Potential_therapeutic_event")
    assert schema.MAIN_ROLES == ("Subject", "Treatment", "Effect")
    assert schema.SUB_ROLES["Subject"] == ("Age", "Gender", "Population", "Race", "Disorder")
    assert schema.SUB_ROLES["Treatment"] == (
        "Drug", "Dosage", "Freq", "Route", "Time_elapsed", "Duration", "Disorder",
    )
    assert "Effect" not in schema.SUB_ROLES
    assert schema.ATTRIBUTES == ("Speculated", "Negated", "Severity")
    assert len(schema.SUB_ROLE_KEYS) == 13 and schema.SUB_ROLE_KEYS[-1] == "Combination.Drug"
    assert schema.ROLE_KEYS[:3] == schema.MAIN_ROLES and len(schema.ROLE_KEYS) == 16


def test_role_key() -> None:
    assert schema.role_key("Subject") == "Subject"
    assert schema.role_key("Treatment", "Time_elapsed") == "Treatment.Time_elapsed"
    assert schema.role_key("Combination", "Drug") == "Combination.Drug"
    with pytest.raises(SchemaError, match=r"'Effect.Age'.*valid: Subject, Treatment"):
        schema.role_key("Effect", "Age")


def test_validators_list_valid_names_and_location() -> None:
    with pytest.raises(SchemaError, match=r"\[CLX005\] f.json:3: field 'x': unknown event type 'ADE'; "
                       r"valid: Adverse_event, Potential_therapeutic_event"):
        schema.check_event_type("ADE", path="f.json", line=3, field="x")
    with pytest.raises(SchemaError, match="valid: Subject, Treatment, Effect"):
        schema.check_main_role("Drug")
    with pytest.raises(SchemaError, match="valid: none"):
        schema.check_sub_role("Effect", "Age")
    with pytest.raises(SchemaError, match="valid: Age, Gender, Population, Race, Disorder"):
        schema.check_sub_role("Subject", "Drug")
    assert schema.check_sub_role("Treatment", "Disorder") == "Disorder"


def test_attribute_values() -> None:
    assert schema.check_attribute("Severity", "Medium") == "Severity"
    assert schema.check_attribute("Negated", True) == "Negated"
    assert schema.check_attribute("Speculated") == "Speculated"
    with pytest.raises(SchemaError, match=r"Severity has value 'Extreme'; valid: 'High', 'Medium', 'Low'"):
        schema.check_attribute("Severity", "Extreme")
    with pytest.raises(SchemaError, match="Negated has value 1"):
        schema.check_attribute("Negated", 1)
    with pytest.raises(SchemaError, match="unknown attribute 'Hedged'"):
        schema.check_attribute("Hedged")
