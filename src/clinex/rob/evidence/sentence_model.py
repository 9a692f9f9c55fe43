"""Supervised sentence model of RoB 2 evidence (TF-IDF + logistic regression per SQ).

Training: every document is cut into sentence-like segments
(:func:`~clinex.rob.evidence.segment.segment_document`); a segment is a positive
example for SQ *q* when an annotated span labelled *q* covers at least
``min_overlap`` of the segment's characters or at least half of the span lies in
the segment. Features are TF-IDF word uni- and bigrams of the normalised segment
text plus, optionally, one indicator per SQ for "a cue of the lexicon matches".
One class-balanced logistic regression per SQ decides *is this segment evidence
for q*; a second one per SQ, trained on the positive segments' annotated
responses, predicts the response the evidence implies (when the segment also
matches a cue for q, the cue's response is used instead: it is explicit). The
answer then comes from the evidence votes
(:func:`~clinex.rob.evidence.response.answer_from_votes`).

References
----------
Sterne JAC et al. RoB 2. BMJ 2019;366:l4898 (questions, responses).
Marshall IJ, Kuiper J, Wallace BC. RobotReviewer: evaluation of a system for
automatically assessing bias in clinical trials. JAMIA 2016;23(1):193-201
(sentence-level linear models over bag-of-words features for RoB evidence).
Pedregosa F et al. Scikit-learn. JMLR 2011;12:2825-2830.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clinex.errors import FormatError, InputError, ModelError, SchemaError
from clinex.rob.evidence.cues import CueEvidenceModel
from clinex.rob.evidence.response import SQ_IDS, answer_from_votes, response_from_label
from clinex.rob.evidence.segment import document_segments, normalise
from clinex.rob.types import Evidence, SQAnswer
from clinex.text import Document, Span

__all__ = ["SentenceEvidenceModel", "segment_labels", "FORMAT"]

#: Marker stored in every saved model file.
FORMAT = "clinex.rob.sentence"
FORMAT_VERSION = 1


def _span_sq_response(label: str | None) -> tuple[str, str | None] | None:
    """(SQ, response or None) of a span label; None when it is not an SQ label."""
    if not label:
        return None
    if label in SQ_IDS:
        return label, None
    try:
        return response_from_label(label)
    except SchemaError:
        return None


def segment_labels(
    segments: Sequence[tuple[int, int]],
    spans: Sequence[Span],
    *,
    min_overlap: float = 0.3,
) -> list[dict[str, list[str]]]:
    """Which SQs (and annotated responses) each segment is evidence for.

    Parameters
    ----------
    segments : sequence of (int, int)
        Half-open character offsets.
    spans : sequence of Span
        Annotated spans labelled with tagtog names (``"1_1_ProbablyYes_Good"``) or
        bare SQ ids (``"1.1"``, no response); other labels are ignored.
    min_overlap : float
        Fraction of the segment's characters a span must cover; a span at least
        half inside the segment also counts.

    Returns
    -------
    list of dict
        Per segment: SQ id -> responses of the spans that mark it (``"Y"``, ``"PY"``,
        ``"PN"``, ``"N"``, ``"NI"``; ``"?"`` for a bare SQ label).
    """
    parsed = []
    for sp in spans:
        sr = _span_sq_response(sp.label)
        if sr is not None:
            parsed.append((sr[0], sr[1] or "?", sp.offsets()))
    out: list[dict[str, list[str]]] = []
    for s, e in segments:
        labels: dict[str, list[str]] = {}
        for sq, resp, offs in parsed:
            inter = sum(max(0, min(e, fe) - max(s, fs)) for fs, fe in offs)
            length = sum(fe - fs for fs, fe in offs)
            if inter > 0 and (inter >= min_overlap * (e - s) or inter >= 0.5 * length):
                labels.setdefault(sq, []).append(resp)
        out.append(labels)
    return out


class SentenceEvidenceModel:
    """Sentence classifier per SQ with a response classifier on the evidence.

    Parameters
    ----------
    C : float, default 1.0
        Inverse L2 regularisation strength of the logistic regressions (> 0).
    threshold : float, default 0.3
        A segment is evidence for an SQ when its probability is at least this
        (the class-balanced regressions over-estimate the rare positive class, so
        the probability is a ranking score more than a calibrated one).
    max_evidence : int, default 3
        Most evidence segments kept per SQ (highest probability first).
    min_overlap : float, default 0.3
        See :func:`segment_labels`.
    use_cues : bool, default True
        Add the cue lexicon's matches as features and let a matching cue set the
        response of a piece of evidence.
    max_chars : int, default 500
        Longest segment in characters.
    min_df : int, default 1
        Minimum document frequency (segments) of an n-gram.
    cue_prior : float, default 1.0
        With ``use_cues``, a segment matching a cue of weight *w* for an SQ scores
        at least ``cue_prior * w`` for it: 0 leaves the decision to the classifier,
        1 makes every cue match at or above ``threshold`` a candidate too (the
        union of the two models' evidence, ranked by score). The defaults
        (threshold 0.3, 3 pieces of evidence, cue_prior 1) were chosen by
        leave-one-document-out on the preliminary RoB corpus (docs/rob.md).

    Attributes
    ----------
    vectorizer_ : sklearn.feature_extraction.text.TfidfVectorizer
        Fitted on the training segments' normalised text.
    detectors_ : dict of str to LogisticRegression or None
        Per SQ; None when the training data held no positive (or only positive)
        segments for it: the SQ is then never given evidence.
    responders_ : dict of str to LogisticRegression or str
        Per SQ with positives: a classifier of the response, or the only
        response seen.
    n_segments_ : int
        Training segments.
    n_positive_ : dict of str to int
        Positive training segments per SQ.
    cue_lexicon_ : str or None
        Name of the cue lexicon whose matches are features (None without cues).

    References
    ----------
    Marshall IJ et al. JAMIA 2016;23(1):193-201.
    """

    kind = "sentence"

    def __init__(self, *, C: float = 1.0, threshold: float = 0.3, max_evidence: int = 3,
                 min_overlap: float = 0.3, use_cues: bool = True, max_chars: int = 500,
                 min_df: int = 1, cue_prior: float = 1.0) -> None:
        self.C = C
        self.threshold = threshold
        self.max_evidence = max_evidence
        self.min_overlap = min_overlap
        self.use_cues = use_cues
        self.max_chars = max_chars
        self.min_df = min_df
        self.cue_prior = cue_prior

    # -- parameters -------------------------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        """The constructor parameters (sklearn convention)."""
        return {"C": self.C, "threshold": self.threshold, "max_evidence": self.max_evidence,
                "min_overlap": self.min_overlap, "use_cues": self.use_cues,
                "max_chars": self.max_chars, "min_df": self.min_df, "cue_prior": self.cue_prior}

    def _check_params(self) -> None:
        checks = [
            ("C", self.C > 0, "a float > 0"),
            ("threshold", 0.0 <= self.threshold <= 1.0, "a float in [0, 1]"),
            ("max_evidence", isinstance(self.max_evidence, int) and self.max_evidence >= 1,
             "an int >= 1"),
            ("min_overlap", 0.0 < self.min_overlap <= 1.0, "a float in (0, 1]"),
            ("max_chars", isinstance(self.max_chars, int) and self.max_chars >= 50, "an int >= 50"),
            ("min_df", isinstance(self.min_df, int) and self.min_df >= 1, "an int >= 1"),
            ("cue_prior", 0.0 <= self.cue_prior <= 1.0, "a float in [0, 1]"),
        ]
        for name, ok, what in checks:
            if not ok:
                raise SchemaError(
                    f"the {name!r} parameter of SentenceEvidenceModel must be {what}; "
                    f"got {getattr(self, name)!r}", field=name)

    @property
    def name(self) -> str:
        """Versioned model name."""
        return f"{FORMAT}.v{FORMAT_VERSION}"

    # -- features ---------------------------------------------------------------------
    def _cues(self) -> CueEvidenceModel:
        if getattr(self, "_cue_model", None) is None:
            self._cue_model = CueEvidenceModel(max_chars=self.max_chars)
        return self._cue_model

    def _features(self, document: Document, segments: list[tuple[int, int]],
                  fit: bool = False) -> tuple[Any, list[dict[str, Any]]]:
        from scipy import sparse

        texts = [normalise(document.text[s:e]) for s, e in segments]
        X = self.vectorizer_.fit_transform(texts) if fit else self.vectorizer_.transform(texts)
        cue_of: list[dict[str, Any]] = [{} for _ in segments]
        if self.use_cues:
            index = {seg: i for i, seg in enumerate(segments)}
            for hit in self._cues().hits(document, segments):
                i = index[(hit.start, hit.end)]
                seen = cue_of[i].get(hit.sq)
                if seen is None or hit.rule.weight > seen.weight:
                    cue_of[i][hit.sq] = hit.rule
            C = np.zeros((len(segments), len(SQ_IDS)))
            col = {sq: j for j, sq in enumerate(SQ_IDS)}
            for i, d in enumerate(cue_of):
                for sq in d:
                    C[i, col[sq]] = 1.0
            X = sparse.hstack([X, sparse.csr_matrix(C)], format="csr")
        return X, cue_of

    # -- fitting ----------------------------------------------------------------------
    def fit(self, documents: Sequence[Document],
            spans: Sequence[Sequence[Span]]) -> "SentenceEvidenceModel":
        """Learn from documents and their annotated spans.

        Parameters
        ----------
        documents : sequence of Document
        spans : sequence of sequence of Span
            ``spans[i]`` annotates ``documents[i]`` (labels as in :func:`segment_labels`;
            spans of several annotators may be pooled).

        Returns
        -------
        self

        Raises
        ------
        SchemaError
            Invalid parameters.
        InputError
            No documents, lengths differ, or no span with an SQ label at all.
        """
        import sklearn.linear_model  # noqa: F401  (load its OpenMP runtime before limiting it)
        from threadpoolctl import threadpool_limits

        # Small sparse problems: OpenMP/BLAS threads only contend (liblinear runs up to
        # 20x slower on a busy machine), so fitting runs single-threaded.
        with threadpool_limits(limits=1):
            return self._fit(documents, spans)

    def _fit(self, documents: Sequence[Document],
             spans: Sequence[Sequence[Span]]) -> "SentenceEvidenceModel":
        from scipy import sparse
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.multiclass import OneVsRestClassifier

        self._check_params()
        if len(documents) == 0 or len(documents) != len(spans):
            raise InputError(f"need one span list per document; got {len(documents)} documents "
                             f"and {len(spans)} span lists")
        self.vectorizer_ = TfidfVectorizer(ngram_range=(1, 2), min_df=self.min_df,
                                           sublinear_tf=True, token_pattern=r"(?u)\b\w\w+\b")
        seg_texts: list[str] = []
        labels: list[dict[str, list[str]]] = []
        per_doc: list[tuple[Document, list[tuple[int, int]]]] = []
        for doc, doc_spans in zip(documents, spans):
            segs = document_segments(doc, max_chars=self.max_chars)
            per_doc.append((doc, segs))
            seg_texts.extend(normalise(doc.text[s:e]) for s, e in segs)
            labels.extend(segment_labels(segs, doc_spans, min_overlap=self.min_overlap))
        if not any(labels):
            raise InputError("no annotated span with a signalling-question label in the "
                             "training data")
        self.vectorizer_.fit(seg_texts)
        self.cue_lexicon_ = self._cues().name if self.use_cues else None
        blocks = [self._features(doc, segs)[0] for doc, segs in per_doc]
        X = sparse.vstack(blocks, format="csr")
        self.n_segments_ = X.shape[0]
        self.n_positive_ = {}
        self.detectors_ = {}
        self.responders_ = {}
        for sq in SQ_IDS:
            y = np.array([sq in lab for lab in labels], dtype=int)
            self.n_positive_[sq] = int(y.sum())
            if y.sum() == 0 or y.sum() == len(y):
                self.detectors_[sq] = None
                continue
            clf = LogisticRegression(C=self.C, class_weight="balanced", solver="liblinear",
                                     max_iter=1000)
            self.detectors_[sq] = clf.fit(X, y)
            idx = np.flatnonzero(y)
            resp = [Counter(r for r in labels[i][sq] if r != "?").most_common(1) for i in idx]
            keep = [(i, r[0][0]) for i, r in zip(idx, resp) if r]
            kinds = Counter(r for _, r in keep)
            if len(kinds) >= 2 and len(keep) >= 4:
                rc = OneVsRestClassifier(LogisticRegression(
                    C=self.C, class_weight="balanced", solver="liblinear", max_iter=1000))
                self.responders_[sq] = rc.fit(X[[i for i, _ in keep]], [r for _, r in keep])
            elif kinds:
                self.responders_[sq] = kinds.most_common(1)[0][0]
            else:
                self.responders_[sq] = "NI"
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "detectors_"):
            raise ModelError("this SentenceEvidenceModel is not fitted yet; call 'fit' "
                             "(or `clinex rob train`) first")

    # -- prediction -------------------------------------------------------------------
    def segment_scores(self, document: Document) -> tuple[list[tuple[int, int]], np.ndarray]:
        """Evidence probability of every segment for every SQ.

        Parameters
        ----------
        document : Document

        Returns
        -------
        segments : list of (int, int)
        scores : ndarray of shape (n_segments, 22)
            Columns in :data:`~clinex.rob.evidence.response.SQ_IDS` order; 0 for SQs
            the model never saw.
        """
        self._check_fitted()
        segs = document_segments(document, max_chars=self.max_chars)
        P = np.zeros((len(segs), len(SQ_IDS)))
        if not segs:
            return segs, P
        X, _ = self._features(document, segs)
        for j, sq in enumerate(SQ_IDS):
            clf = self.detectors_.get(sq)
            if clf is not None:
                P[:, j] = clf.predict_proba(X)[:, 1]
        return segs, P

    def predict(self, document: Document) -> dict[str, SQAnswer]:
        """Answer all 22 SQs for one document.

        Parameters
        ----------
        document : Document

        Returns
        -------
        dict of str to SQAnswer
            Keyed by SQ id in RoB 2 order; SQs without a segment scoring at least
            ``threshold`` are NI without evidence.

        Raises
        ------
        ModelError
            The model is not fitted.
        """
        self._check_fitted()
        segs = document_segments(document, max_chars=self.max_chars)
        answers: dict[str, SQAnswer] = {}
        if segs:
            X, cue_of = self._features(document, segs)
        prior = self.cue_prior if self.use_cues else 0.0
        for sq in SQ_IDS:
            clf = self.detectors_.get(sq)
            if not segs or (clf is None and prior == 0.0):
                answers[sq] = answer_from_votes(sq, [], [])
                continue
            p = clf.predict_proba(X)[:, 1] if clf is not None else np.zeros(len(segs))
            if prior > 0.0:
                cue_p = np.array([prior * d[sq].weight if sq in d else 0.0 for d in cue_of])
                p = np.maximum(p, cue_p)
            chosen = [i for i in np.argsort(-p, kind="stable") if p[i] >= self.threshold]
            chosen = chosen[: self.max_evidence]
            evidence, votes = [], []
            responder = self.responders_.get(sq, "NI")
            learned = (responder.predict(X[chosen]) if chosen and not isinstance(responder, str)
                       else [responder] * len(chosen))
            for i, resp in zip(chosen, learned):
                s, e = segs[i]
                score = float(p[i])
                rule = cue_of[i].get(sq)
                source = self.name + (f"+{self._cues().name}:{sq}/{rule.id}" if rule else "")
                evidence.append(Evidence(
                    span=Span.from_offsets(document.text, (s, e), label=sq, score=score,
                                           source=source),
                    page=document.page_of(s), score=score, source=source))
                votes.append((rule.response if rule is not None else str(resp), score))
            answers[sq] = answer_from_votes(sq, evidence, votes)
        return answers

    # -- persistence ------------------------------------------------------------------
    def save(self, path: str | Path, *, force: bool = False) -> Path:
        """Write the fitted model with joblib, atomically (:func:`clinex.io.atomic.atomic_path`).

        Parameters
        ----------
        path : str or Path
            Target file (conventionally ``*.joblib``); parent folders are created.
        force : bool, default False
            Replace an existing file (the old model stays until the new one is whole).

        Returns
        -------
        Path

        Raises
        ------
        ModelError
            Not fitted.
        InputError
            ``path`` exists and ``force`` is False (a user's file is never overwritten), or
            it cannot be written (the operating system's reason, e.g. a full disk).

        Notes
        -----
        joblib files are pickles: load only model files you made or trust.
        """
        import joblib
        import sklearn

        from clinex import __version__

        self._check_fitted()
        p = Path(path)
        if p.exists() and not force:
            raise InputError("file exists; refusing to overwrite", path=p)
        state = {k: v for k, v in self.__dict__.items() if k.endswith("_") and not k.startswith("_")}
        from clinex.io.atomic import atomic_path

        with atomic_path(p, force=force) as tmp:
            joblib.dump({"format": FORMAT, "format_version": FORMAT_VERSION,
                         "clinex": __version__, "sklearn": sklearn.__version__,
                         "params": self.get_params(), "state": state}, tmp)
        return p

    @classmethod
    def load(cls, path: str | Path) -> "SentenceEvidenceModel":
        """Read a model written by :meth:`save`.

        Raises
        ------
        InputError
            No such file.
        FormatError
            Not a clinex sentence model file.
        ModelError
            Saved by an incompatible format version.
        """
        import joblib

        p = Path(path)
        if not p.is_file():
            raise InputError("no such model file", path=p)
        try:
            data = joblib.load(p)
        except Exception as exc:  # joblib/pickle raise many types
            raise FormatError(f"not a joblib model file ({type(exc).__name__})", path=p) from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise FormatError(f"not a {FORMAT} model file", path=p, field="format")
        if data.get("format_version") != FORMAT_VERSION:
            raise ModelError(f"model format version {data.get('format_version')!r}; this clinex "
                             f"reads version {FORMAT_VERSION}", path=p, field="format_version")
        model = cls(**data["params"])
        for k, v in data["state"].items():
            setattr(model, k, v)
        lex = getattr(model, "cue_lexicon_", None)
        if lex is not None and lex != model._cues().name:
            raise ModelError(f"model trained with cue lexicon {lex!r}, this clinex ships "
                             f"{model._cues().name!r}; retrain it (clinex rob train)", path=p,
                             field="cue_lexicon_")
        return model
