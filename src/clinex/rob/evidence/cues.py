"""Transparent cue (lexicon) model of RoB 2 evidence.

The lexicon is data (``clinex/resources/rob/cues.yaml``): per signalling question
(SQ), regular-expression cues, each implying a response option with a weight. Every
match is checked for negation and hedging (medspaCy ConText,
:mod:`clinex.rob.evidence.assertion`): a negated cue is dropped, a hedged one
is weakened to PY / PN.
:class:`CueEvidenceModel` splits a document into sentence-like segments
(:func:`~clinex.rob.evidence.segment.segment_document`), matches every cue against
each segment's normalised form, offers each matching segment as evidence for the
cue's SQ (score = the cue's weight, source = the rule id) and answers each SQ from
the evidence's votes (:func:`~clinex.rob.evidence.response.answer_from_votes`).

References
----------
Sterne JAC et al. RoB 2: a revised tool for assessing risk of bias in randomised
trials. BMJ 2019;366:l4898.
Higgins JPT et al. RoB 2 full guidance document, 22 August 2019 (adequate and
inadequate methods listed per signalling question, source of the cues).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from clinex.errors import FormatError, InputError, ModelError, SchemaError
from clinex.io.textfile import parse_yaml
from clinex.rob.evidence.response import SQ_IDS, answer_from_votes
from clinex.rob.evidence.segment import document_segments, normalise_with_offsets
from clinex.rob.types import Evidence, SQAnswer
from clinex.text import Document, Span

__all__ = ["CueRule", "CueLexicon", "CueHit", "load_lexicon", "CueEvidenceModel"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class CueRule(BaseModel):
    """One cue: a pattern over normalised sentences and the response it implies.

    Attributes
    ----------
    id : str
        Rule id, unique within its SQ.
    pattern : str
        Regular expression over :func:`~clinex.rob.evidence.segment.normalise`'d
        text; a literal space matches an optional space.
    response : str
        Y, PY, PN, N or NI.
    weight : float
        In (0, 1].
    """

    model_config = _FROZEN

    id: str = Field(min_length=1)
    pattern: str = Field(min_length=1)
    response: str
    weight: float = Field(gt=0.0, le=1.0)

    @field_validator("response")
    @classmethod
    def _response(cls, v: str) -> str:
        if v not in ("Y", "PY", "PN", "N", "NI"):
            raise ValueError(f"{v!r} not in Y, PY, PN, N, NI")
        return v

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            compile_pattern(v)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        return v


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a cue pattern: each literal space becomes an optional space.

    Parameters
    ----------
    pattern : str
        Cue pattern as written in the lexicon.

    Returns
    -------
    re.Pattern
    """
    return re.compile(re.sub(r" +", " ?", pattern.strip()))


class CueLexicon(BaseModel):
    """A validated cue lexicon.

    Attributes
    ----------
    version : int
    name : str
        Versioned name, e.g. ``"clinex.rob.cues.v1"`` (provenance of evidence).
    sqs : dict of str to list of CueRule
        Keys are SQ ids (``"1.1"`` ...); SQs without cues may be absent.
    """

    model_config = _FROZEN

    version: int = 1
    name: str = "clinex.rob.cues.v1"
    sqs: dict[str, tuple[CueRule, ...]]

    @field_validator("sqs")
    @classmethod
    def _known(cls, v: dict[str, tuple[CueRule, ...]]) -> dict[str, tuple[CueRule, ...]]:
        for sq, rules in v.items():
            if sq not in SQ_IDS:
                raise ValueError(f"unknown signalling question {sq!r}; known: {', '.join(SQ_IDS)}")
            ids = [r.id for r in rules]
            dup = {i for i in ids if ids.count(i) > 1}
            if dup:
                raise ValueError(f"SQ {sq}: duplicate rule id(s) {sorted(dup)}")
        return v


DEFAULT_LEXICON = "cues.yaml"


def _digest(lexicon: "CueLexicon") -> str:
    import hashlib
    import json

    payload = json.dumps({sq: [r.model_dump() for r in rules] for sq, rules in sorted(lexicon.sqs.items())},
                         sort_keys=True)
    return hashlib.sha1(payload.encode("utf-8")).hexdigest()[:8]


_PACKAGED: list[str] = []


def _packaged_digest() -> str:
    if not _PACKAGED:
        _PACKAGED.append(_digest(load_lexicon(None)))
    return _PACKAGED[0]


def load_lexicon(path: str | Path | None = None) -> CueLexicon:
    """Read and validate a cue lexicon (YAML or JSON).

    Parameters
    ----------
    path : str, Path or None
        A lexicon file; None (or ``"default"``) reads the packaged
        ``clinex/resources/rob/cues.yaml``.

    Returns
    -------
    CueLexicon

    Raises
    ------
    InputError
        No such file.
    FormatError
        Not YAML/JSON, or a cue that does not validate (the message names the SQ,
        the cue's 0-based index and the field).
    """
    if path is None or str(path) == "default":
        res = resources.files("clinex.resources").joinpath("rob", DEFAULT_LEXICON)
        where = f"clinex/resources/rob/{DEFAULT_LEXICON}"
        raw = res.read_text(encoding="utf-8")
    else:
        p = Path(path)
        if not p.is_file():
            raise InputError("no such cue lexicon file", path=p)
        where = str(p)
        raw = p.read_text(encoding="utf-8")
    data = parse_yaml(raw, path=where)
    return lexicon_from_dict(data, where=where)


def lexicon_from_dict(data: Any, *, where: str = "<lexicon>") -> CueLexicon:
    """Validate a lexicon given as a mapping (see :func:`load_lexicon`).

    Raises
    ------
    FormatError
        Naming ``where``, the SQ, the cue index and the field.
    """
    if not isinstance(data, dict) or not isinstance(data.get("sqs"), dict):
        raise FormatError("expected a mapping with an 'sqs' mapping", path=where, field="sqs")
    for sq, rules in data["sqs"].items():
        if not isinstance(rules, list):
            raise FormatError("expected a list of cues", path=where, field=f"sqs.{sq}")
        for i, rule in enumerate(rules):
            try:
                CueRule.model_validate(rule)
            except ValidationError as exc:
                err = exc.errors()[0]
                loc = ".".join(str(x) for x in err["loc"])
                raise FormatError(f"{err['msg']}", path=where,
                                  field=f"sqs.{sq}[{i}]{'.' + loc if loc else ''}") from None
    try:
        return CueLexicon.model_validate(
            {**data, "sqs": {str(k): tuple(v) for k, v in data["sqs"].items()}}
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        raise FormatError(str(err["msg"]), path=where,
                          field=".".join(str(x) for x in err["loc"])) from None


@dataclass(frozen=True)
class CueHit:
    """One cue matching one segment.

    Attributes
    ----------
    sq : str
    start, end : int
        The segment's character offsets into ``Document.text`` (half-open).
    rule : CueRule
    """

    sq: str
    start: int
    end: int
    rule: CueRule


class CueEvidenceModel:
    """Evidence per SQ from the cue lexicon.

    Parameters
    ----------
    lexicon : str, Path or CueLexicon
        ``"default"`` (the packaged lexicon), a lexicon file, or a lexicon.
    max_evidence : int, default 2
        Most evidence segments kept per SQ (highest weight first, then text order).
        Chosen by leave-one-document-out on the preliminary RoB corpus (1, 2, 3, 5, 8
        gave mean SQ token F1 7.69, 11.02, 10.50, 10.97, 11.10 %; docs/rob.md).
    max_chars : int
        Longest evidence segment in characters (see
        :func:`~clinex.rob.evidence.segment.segment_document`).

    Attributes
    ----------
    lexicon_ : CueLexicon
        The validated lexicon.

    References
    ----------
    Sterne JAC et al. BMJ 2019;366:l4898 (RoB 2 signalling questions and responses).
    """

    kind = "cues"

    def __init__(self, lexicon: str | Path | CueLexicon = "default", *, max_evidence: int = 2,
                 max_chars: int = 500) -> None:
        self.lexicon = lexicon
        self.max_evidence = max_evidence
        self.max_chars = max_chars
        if max_evidence < 1:
            raise SchemaError("max_evidence must be >= 1", field="max_evidence")
        self.lexicon_ = lexicon if isinstance(lexicon, CueLexicon) else load_lexicon(
            None if str(lexicon) == "default" else lexicon)
        self._compiled = {
            sq: [(compile_pattern(r.pattern), r) for r in rules]
            for sq, rules in self.lexicon_.sqs.items()
        }

    @property
    def name(self) -> str:
        """Versioned model name: the lexicon's name, plus ``+<sha1[:8]>`` of its cues when
        they differ from the packaged lexicon (a user's edited copy keeps its own identity)."""
        base = self.lexicon_.name
        digest = _digest(self.lexicon_)
        return base if digest == _packaged_digest() else f"{base}+{digest}"

    def hits(self, document: Document,
             segments: list[tuple[int, int]] | None = None) -> list[CueHit]:
        """All (segment, cue) matches of a document.

        Parameters
        ----------
        document : Document
        segments : list of (int, int), optional
            Precomputed segments (default: the document's,
            :func:`~clinex.rob.evidence.segment.document_segments`).

        Returns
        -------
        list of CueHit
            In text order, then lexicon order.
        """
        if segments is None:
            segments = document_segments(document, max_chars=self.max_chars)
        out: list[CueHit] = []
        for start, end in segments:
            out.extend(CueHit(sq, start, end, rule) for sq, rule in self.asserted_matches(document.text[start:end]))
        return out

    def asserted_matches(self, text: str, *, best_per_sq: bool = False) -> list[tuple[str, CueRule]]:
        """The cues matching one segment, after their assertion scope.

        Every match is checked with ConText (:mod:`clinex.rob.evidence.assertion`): a
        negated cue ("Outcome assessors were not blinded" for "assessors ... blinded") is
        dropped, a hedged one is weakened to PY / PN with 0.8 × its weight.

        Parameters
        ----------
        text : str
            One segment.
        best_per_sq : bool, default False
            Keep only the highest-weight matching cue of each SQ (before assertion).

        Returns
        -------
        list of (str, CueRule)
            (SQ id, rule as asserted), in lexicon order.
        """
        from clinex.rob.evidence.assertion import default_scope

        norm, offsets = normalise_with_offsets(text)
        found: list[tuple[str, CueRule, tuple[int, int]]] = []
        for sq, compiled in self._compiled.items():
            for pattern, rule in compiled:
                m = pattern.search(norm)
                if not m:
                    continue
                a = offsets[m.start()] if m.start() < len(offsets) else 0
                b = offsets[m.end() - 1] + 1 if 0 < m.end() <= len(offsets) else len(text)
                if best_per_sq and found and found[-1][0] == sq:
                    if rule.weight > found[-1][1].weight:
                        found[-1] = (sq, rule, (a, max(b, a + 1)))
                    continue
                found.append((sq, rule, (a, max(b, a + 1))))
        if not found:
            return []
        out = []
        for (sq, rule, _), asserted in zip(found, default_scope().check(text, [f[2] for f in found])):
            if asserted.negated:
                continue
            if asserted.hedged and rule.response in ("Y", "N"):
                rule = rule.model_copy(update={"response": {"Y": "PY", "N": "PN"}[rule.response],
                                               "weight": rule.weight * 0.8})
            out.append((sq, rule))
        return out

    def predict(self, document: Document) -> dict[str, SQAnswer]:
        """Answer all 22 SQs for one document.

        Parameters
        ----------
        document : Document

        Returns
        -------
        dict of str to SQAnswer
            Keyed by SQ id in RoB 2 order. Each segment counts once per SQ, with
            its best cue; SQs without evidence are NI.
        """
        best: dict[str, dict[tuple[int, int], CueRule]] = {sq: {} for sq in SQ_IDS}
        for hit in self.hits(document):
            seen = best[hit.sq].get((hit.start, hit.end))
            if seen is None or hit.rule.weight > seen.weight:
                best[hit.sq][(hit.start, hit.end)] = hit.rule
        answers: dict[str, SQAnswer] = {}
        for sq in SQ_IDS:
            ranked = sorted(best[sq].items(), key=lambda kv: (-kv[1].weight, kv[0][0]))
            ranked = ranked[: self.max_evidence]
            evidence = [
                Evidence(
                    span=Span.from_offsets(document.text, off, label=sq, score=rule.weight,
                                           source=f"{self.name}:{sq}/{rule.id}"),
                    page=document.page_of(off[0]),
                    score=rule.weight,
                    source=f"{self.name}:{sq}/{rule.id}",
                )
                for off, rule in ranked
            ]
            votes = [(rule.response, rule.weight) for _, rule in ranked]
            answers[sq] = answer_from_votes(sq, evidence, votes)
        return answers

    def save(self, path: str | Path) -> Path:
        """Write the lexicon as YAML (``kind: cues``) to ``path``.

        Raises
        ------
        InputError
            ``path`` exists (a user's file is never overwritten).
        """
        import yaml

        p = Path(path)
        if p.exists():
            raise InputError("file exists; refusing to overwrite", path=p)
        data = {"kind": "cues", "version": self.lexicon_.version, "name": self.lexicon_.name,
                "max_evidence": self.max_evidence, "max_chars": self.max_chars,
                "sqs": {sq: [r.model_dump() for r in rules]
                        for sq, rules in self.lexicon_.sqs.items()}}
        from clinex.io.atomic import write_atomic

        write_atomic(p, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        return p

    @classmethod
    def load(cls, path: str | Path) -> "CueEvidenceModel":
        """Read a model written by :meth:`save` (or any lexicon file).

        Raises
        ------
        InputError, FormatError
            As :func:`load_lexicon`.
        ModelError
            The file holds another kind of model.
        """
        import yaml

        p = Path(path)
        if not p.is_file():
            raise InputError("no such model file", path=p)
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise FormatError(f"not a YAML cue model: {type(exc).__name__}", path=p) from None
        if not isinstance(data, dict):
            raise FormatError("expected a mapping", path=p)
        kind = data.pop("kind", "cues")
        if kind != "cues":
            raise ModelError(f"model kind {kind!r} is not 'cues'", path=p, field="kind")
        max_evidence = int(data.pop("max_evidence", 2))
        max_chars = int(data.pop("max_chars", 500))
        lex = lexicon_from_dict(data, where=str(p))
        return cls(lex, max_evidence=max_evidence, max_chars=max_chars)
