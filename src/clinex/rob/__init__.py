"""Risk-of-bias evidence (Cochrane RoB 2, RoBuster scheme).

Public API::

    from clinex.rob import assess, assess_path, write_json, write_html, plot_traffic_light

    assessment = assess(document)            # TrialAssessment: D1..D5 + overall
    assessment = assess_path("trial.pdf")    # read with clinex.rob.formats.load, then assess

Schema and algorithms live in :mod:`clinex.rob.schema` (5 domains, 22 signalling
questions, responses) and :mod:`clinex.rob.algorithm` (RoB 2 decision tables).
"""

from clinex.rob.assess import assess, assess_path
from clinex.rob.plot import plot_traffic_light
from clinex.rob.report import read_json, write_html, write_json
from clinex.rob.types import DomainResult, Evidence, SQAnswer, TrialAssessment

__all__ = [
    "assess",
    "assess_path",
    "write_json",
    "read_json",
    "write_html",
    "plot_traffic_light",
    "Evidence",
    "SQAnswer",
    "DomainResult",
    "TrialAssessment",
]
