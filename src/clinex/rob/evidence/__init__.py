"""Evidence extraction per RoB 2 signalling question (SQ).

Two models share one interface (:class:`EvidenceModel`): ``predict(document)``
returns an :class:`~clinex.rob.types.SQAnswer` for each of the 22 SQs (evidence
spans with page and character offsets, response Y/PY/PN/N/NI, judgement
Good/Bad, confidence), ``save(path)`` and ``load(path)``.

* ``"cues"`` — :class:`~clinex.rob.evidence.cues.CueEvidenceModel`: a transparent
  lexicon (``clinex/resources/rob/cues.yaml``) of cue patterns, each implying a
  response. The shipped default.
* ``"sentence"`` — :class:`~clinex.rob.evidence.sentence_model.SentenceEvidenceModel`:
  TF-IDF + logistic regression per SQ over sentences, trained on annotated spans
  (``clinex rob train``); no trained model ships (the only annotated corpus at
  hand has no licence).

:func:`load_evidence_model` picks one by name or path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from clinex.errors import ModelError
from clinex.rob.types import SQAnswer
from clinex.text import Document

__all__ = ["EvidenceModel", "load_evidence_model", "default_model_path", "MODEL_NAMES"]

#: Names :func:`load_evidence_model` accepts besides a path.
MODEL_NAMES = ("rules", "cues", "sentence", "auto")


@runtime_checkable
class EvidenceModel(Protocol):
    """What every evidence model offers."""

    kind: str

    @property
    def name(self) -> str:
        """Versioned model name (provenance of the evidence)."""
        ...

    def predict(self, document: Document) -> dict[str, SQAnswer]:
        """Answers to all 22 SQs, keyed by SQ id."""
        ...

    def save(self, path: str | Path) -> Path:
        """Write the model to ``path``."""
        ...


def default_model_path() -> Path:
    """Where ``clinex rob train`` writes, and ``"auto"``/``"sentence"`` look, by default.

    Returns
    -------
    Path
        ``$CLINEX_DATA/models/rob-sentence.joblib`` (``CLINEX_DATA`` defaults to
        ``~/.cache/clinex``).
    """
    from clinex.datasets import data_home

    return data_home() / "models" / "rob-sentence.joblib"


def load_evidence_model(name: str | Path = "auto") -> EvidenceModel:
    """Load an evidence model by name or path.

    Parameters
    ----------
    name : str or Path
        ``"cues"``: the packaged cue lexicon. ``"sentence"``: the sentence model
        trained by ``clinex rob train`` at :func:`default_model_path`. ``"auto"``:
        that sentence model if it exists, else the cue model. Otherwise a path:
        a ``.yaml``/``.yml``/``.json`` cue lexicon or model, or a sentence model
        file written by :meth:`SentenceEvidenceModel.save`.

    Returns
    -------
    EvidenceModel

    Raises
    ------
    ModelError
        ``"sentence"`` without a trained model, or a path that does not exist
        (the message lists the valid names).
    FormatError
        A model file that cannot be read.

    Examples
    --------
    >>> load_evidence_model("cues").kind
    'cues'
    """
    from clinex.rob.evidence.cues import CueEvidenceModel

    key = str(name)
    if key in ("rules", "auto"):
        from clinex.rob.evidence.reasoning import RulesEvidenceModel

        return RulesEvidenceModel()
    if key == "cues":
        return CueEvidenceModel()
    if key == "sentence":
        path = default_model_path()
        if path.is_file():
            from clinex.rob.evidence.sentence_model import SentenceEvidenceModel

            return SentenceEvidenceModel.load(path)
        raise ModelError(
            "no trained sentence model; run `clinex rob train CORPUS` first or pass a model path",
            path=path,
        )
    path = Path(key)
    if not path.is_file():
        raise ModelError(
            f"unknown evidence model {key!r}: not one of {', '.join(MODEL_NAMES)} "
            "and not an existing file"
        )
    if path.suffix.lower() in (".yaml", ".yml", ".json"):
        return CueEvidenceModel.load(path)
    from clinex.rob.evidence.sentence_model import SentenceEvidenceModel

    return SentenceEvidenceModel.load(path)
