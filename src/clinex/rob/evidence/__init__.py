"""Evidence extraction per RoB 2 signalling question (SQ).

The models share one interface (:class:`EvidenceModel`): ``predict(document)``
returns an :class:`~clinex.rob.types.SQAnswer` for each of the 22 SQs (evidence
spans with page and character offsets, response Y/PY/PN/N/NI, judgement
Good/Bad, confidence), ``save(path)`` and ``load(path)``.

* ``"rules"`` — :class:`~clinex.rob.evidence.reasoning.RulesEvidenceModel`: named rules
  over the report's sentences, findings and participant flow (:mod:`.reasoning`). The
  default (``auto``).
* ``"cues"`` — :class:`~clinex.rob.evidence.cues.CueEvidenceModel`: a transparent
  lexicon (``clinex/resources/rob/cues.yaml``) of cue patterns, each implying a
  response.
* ``"sentence"`` — :class:`~clinex.rob.evidence.sentence_model.SentenceEvidenceModel`:
  TF-IDF + logistic regression per SQ over sentences, trained on annotated spans
  (``clinex rob train``); no trained model ships (the only annotated corpus at
  hand has no licence).

:data:`REGISTRY` (a :class:`clinex.registry.Registry`, the one registry type of every task)
lists the names; :func:`load_evidence_model` picks one by name or path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from clinex.registry import AUTO, ModelKind, Registry
from clinex.rob.types import SQAnswer
from clinex.text import Document

__all__ = [
    "EvidenceModel", "EvidenceKind", "REGISTRY", "AUTO", "load_evidence_model", "default_model_path",
    "model_names", "unknown_model_message",
]


EvidenceKind = ModelKind
"""An evidence model kind: the one entry shape of every task's registry
(:class:`clinex.registry.ModelKind`; ``EvidenceKind(name, factory, version, description)``)."""


def _file_kind(path: Path) -> str:
    """The kind of a saved evidence model file: a YAML/JSON file's ``kind`` when it names
    a registered kind, else ``cues`` (a cue lexicon); any other file is a ``sentence``
    model (joblib)."""
    if path.suffix.lower() not in (".yaml", ".yml", ".json"):
        return "sentence"
    from clinex.errors import ClinexError
    from clinex.io.textfile import parse_yaml, read_text

    try:
        data = parse_yaml(read_text(path), path=path)
    except ClinexError:  # unreadable: the cue lexicon loader reports it
        return "cues"
    kind = data.get("kind") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) and kind in REGISTRY and kind != "sentence" else "cues"


REGISTRY: Registry = Registry("rob", [
    ModelKind("rules", None, "clinex.rob.rules.v1",
              "named rules over sentences, findings and participant flow (the default)",
              module="clinex.rob.evidence.reasoning", model_class="RulesEvidenceModel"),
    ModelKind("cues", None, "clinex.rob.cues.v1", "the packaged cue lexicon",
              module="clinex.rob.evidence.cues", model_class="CueEvidenceModel"),
    ModelKind("sentence", None, "clinex.rob.sentence.v1",
              "TF-IDF + logistic regression per SQ, trained by 'clinex rob train'",
              module="clinex.rob.evidence.sentence_model", model_class="SentenceEvidenceModel",
              path=lambda: default_model_path(),
              missing="no trained sentence model; run `clinex rob train CORPUS` first or pass a model path"),
    ModelKind("llm", None, "clinex.rob.llm.v1",
              "one prompt per SQ to an LLM on an OpenAI-compatible server (CLINEX_LLM_*; docs/llm.md)",
              module="clinex.rob.evidence.llm", model_class="LLMEvidenceModel", cache=False),
], auto=("rules",), noun="evidence model", paths="file", kind_of=_file_kind)
"""The one list of evidence model names (a :class:`clinex.registry.Registry`): name ->
:class:`~clinex.registry.ModelKind`. Adding a kind here makes the CLI, the web API and
``clinex batch rob`` accept it."""

AUTO_KIND = "rules"
"""The kind ``auto`` loads (the first and only kind of ``REGISTRY.auto``)."""


def model_names() -> tuple[str, ...]:
    """Every name :func:`load_evidence_model` accepts besides a path: the registry's and ``auto``."""
    return REGISTRY.names()


def unknown_model_message(name: str, *, files: bool = True) -> str:
    """The one message for an evidence model name no surface knows (CLI, web, batch, API)."""
    return REGISTRY.unknown_message(name, paths=files)


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
    return REGISTRY.load(name)
