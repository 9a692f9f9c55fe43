"""clinex: clinical and biomedical text to structured, checkable evidence.

Three tasks share one text model (:mod:`clinex.text`) and one error catalogue
(:mod:`clinex.errors`):

- :mod:`clinex.pv` — pharmacovigilance events (PHEE),
- :mod:`clinex.rob` — risk-of-bias evidence (RoB 2, RoBuster scheme),
- :mod:`clinex.cohort` — cohort selection (n2c2 2018 Track 1).
"""

from __future__ import annotations

from clinex.errors import ClinexError
from clinex.text import Document, Fragment, Span

__version__ = "0.1.0"

__all__ = ["ClinexError", "Document", "Fragment", "Span", "__version__"]
