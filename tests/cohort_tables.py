"""A tiny gold / prediction pair (3 patients, 2 criteria) shared by the cohort scoring tests.

Hand counts, 'met' class: ABDOMINAL tp 1, fp 1, fn 0, tn 1; HBA1C tp 1, fp 1, fn 1, tn 0.
"""

GOLD = {
    "1": {"ABDOMINAL": "met", "HBA1C": "met"},
    "2": {"ABDOMINAL": "not met", "HBA1C": "met"},
    "3": {"ABDOMINAL": "not met", "HBA1C": "not met"},
}
PRED = {
    "1": {"ABDOMINAL": "met", "HBA1C": "not met"},
    "2": {"ABDOMINAL": "met", "HBA1C": "met"},
    "3": {"ABDOMINAL": "not met", "HBA1C": "met"},
}
