"""Metrics, one module per paper's metric.

Precision, recall and F1 from counts are computed in one place,
:func:`clinex.metrics.counts.prf` (re-exported here as ``clinex.metrics.prf``).
"""

from clinex.metrics.counts import f1_from, prf, ratio

__all__ = ["prf", "f1_from", "ratio"]
