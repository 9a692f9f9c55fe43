"""Evidence extraction per RoB 2 signalling question (SQ).

The models share one interface (:class:`EvidenceModel`): ``predict(document)``
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

:data:`REGISTRY` lists the names; :func:`load_evidence_model` picks one by name or path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from clinex.errors import ModelError
from clinex.rob.types import SQAnswer
from clinex.text import Document

__all__ = [
    "EvidenceModel", "EvidenceKind", "REGISTRY", "AUTO", "load_evidence_model", "default_model_path",
    "model_names", "unknown_model_message",
]


@dataclass(frozen=True)
class EvidenceKind:
    """One evidence model kind by name: what ``--model NAME``, the web API and batch accept.

    Attributes
    ----------
    name : str
        The name (``cues``), also the model's ``kind``.
    loader : callable
        ``loader() -> EvidenceModel``: the named model (packaged, or trained at
        :func:`default_model_path`); imports its module lazily.
    version : str
        Versioned id of the model the name loads (its ``name``: provenance of the evidence).
    description : str
        One line for help texts.
    """

    name: str
    loader: Callable[[], "EvidenceModel"]
    version: str
    description: str


def _load_rules() -> "EvidenceModel":
    from clinex.rob.evidence.reasoning import RulesEvidenceModel

    return RulesEvidenceModel()


def _load_cues() -> "EvidenceModel":
    from clinex.rob.evidence.cues import CueEvidenceModel

    return CueEvidenceModel()


def _load_llm() -> "EvidenceModel":
    from clinex.rob.evidence.llm import LLMEvidenceModel

    return LLMEvidenceModel()


def _load_sentence() -> "EvidenceModel":
    path = default_model_path()
    if path.is_file():
        from clinex.rob.evidence.sentence_model import SentenceEvidenceModel

        return SentenceEvidenceModel.load(path)
    raise ModelError(
        "no trained sentence model; run `clinex rob train CORPUS` first or pass a model path",
        path=path,
    )


REGISTRY: dict[str, EvidenceKind] = {
    "rules": EvidenceKind("rules", _load_rules, "clinex.rob.rules.v1",
                          "named rules over sentences, findings and participant flow (the default)"),
    "cues": EvidenceKind("cues", _load_cues, "clinex.rob.cues.v1", "the packaged cue lexicon"),
    "sentence": EvidenceKind("sentence", _load_sentence, "clinex.rob.sentence.v1",
                             "TF-IDF + logistic regression per SQ, trained by 'clinex rob train'"),
    "llm": EvidenceKind("llm", _load_llm, "clinex.rob.llm.v1",
                        "one prompt per SQ to an LLM on an OpenAI-compatible server (CLINEX_LLM_*; docs/llm.md)"),
}
"""The one list of evidence model names: name -> :class:`EvidenceKind`. Adding a kind here
makes the CLI, the web API and ``clinex batch rob`` accept it."""

AUTO = "auto"
"""The default name; it loads :data:`AUTO_KIND`."""
AUTO_KIND = "rules"


def model_names() -> tuple[str, ...]:
    """Every name :func:`load_evidence_model` accepts besides a path: the registry's and ``auto``."""
    return (*REGISTRY, AUTO)


def unknown_model_message(name: str, *, files: bool = True) -> str:
    """The one message for an evidence model name no surface knows (CLI, web, batch, API)."""
    tail = " and not an existing file" if files else ""
    return f"unknown evidence model {name!r}: not one of {', '.join(model_names())}{tail}"


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


def _file_kind(path: Path) -> object:
    """The ``kind`` of a YAML/JSON model file (None when unreadable: the loader reports it)."""
    from clinex.errors import ClinexError
    from clinex.io.textfile import parse_yaml, read_text

    try:
        data = parse_yaml(read_text(path), path=path)
    except ClinexError:
        return None
    return data.get("kind") if isinstance(data, dict) else None


def load_evidence_model(name: str | Path = "auto") -> EvidenceModel:
    """Load an evidence model by name or path.

    Parameters
    ----------
    name : str or Path
        A name of :data:`REGISTRY` -- ``"rules"`` (the default rules model),
        ``"cues"`` (the packaged cue lexicon), ``"sentence"`` (the sentence model
        trained by ``clinex rob train`` at :func:`default_model_path`) -- or
        ``"auto"`` (= ``"rules"``). Otherwise a path:
        a ``.yaml``/``.yml``/``.json`` cue lexicon or model (``kind: rules``: rules settings
        written by :meth:`RulesEvidenceModel.save`), or a sentence model
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
    key = str(name)
    if key == AUTO:
        key = AUTO_KIND
    if key in REGISTRY:
        return REGISTRY[key].loader()
    path = Path(key)
    if not path.is_file():
        raise ModelError(unknown_model_message(key))
    from clinex.rob.evidence.cues import CueEvidenceModel

    if path.suffix.lower() in (".yaml", ".yml", ".json"):
        if _file_kind(path) == "rules":
            from clinex.rob.evidence.reasoning import RulesEvidenceModel

            return RulesEvidenceModel.load(path)
        return CueEvidenceModel.load(path)
    from clinex.rob.evidence.sentence_model import SentenceEvidenceModel

    return SentenceEvidenceModel.load(path)
