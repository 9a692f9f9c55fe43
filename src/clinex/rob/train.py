"""Train the sentence evidence model on an annotated corpus (``clinex rob train``).

A corpus is a tagtog export folder (``plain.html/`` page texts, ``ann.json/``
annotations per member, ``annotations-legend.json``), read with
:func:`clinex.rob.formats.tagtog.iter_corpus`. Spans of several annotators may be pooled:
a segment is evidence for an SQ when any chosen annotator marked it so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from clinex.errors import InputError
from clinex.text import Document, Span

__all__ = ["load_training_corpus", "list_annotators", "train_sentence_model"]


def list_annotators(root: str | Path) -> list[str]:
    """Member names of a tagtog export (folders under ``ann.json/members``).

    Raises
    ------
    InputError
        ``root`` is not a tagtog export folder.
    """
    members = Path(root) / "ann.json" / "members"
    if not members.is_dir():
        raise InputError("not a tagtog export (no ann.json/members folder)", path=root)
    return sorted(p.name for p in members.iterdir() if p.is_dir())


def load_training_corpus(
    root: str | Path,
    annotators: Sequence[str],
    *,
    exclude: Iterable[str] = (),
    warnings: list[str] | None = None,
) -> dict[str, tuple[Document, list[Span]]]:
    """Documents and the pooled spans of the chosen annotators.

    Parameters
    ----------
    root : str or Path
        A tagtog export folder.
    annotators : sequence of str
        Member names (``"roger-annotation"``, ...); ``"all"`` alone means every member.
    exclude : iterable of str
        Document ids to leave out (the held-out document of a LODO fold).
    warnings : list of str, optional
        Receives the reader's warnings (realigned or skipped offsets).

    Returns
    -------
    dict of str to (Document, list of Span)
        By document id, sorted; a document is included when at least one chosen
        annotator annotated it. Tagtog offsets that miss their text are realigned.

    Raises
    ------
    InputError
        Not an export folder, unknown annotator, or no document at all.
    """
    from clinex.rob.formats.tagtog import iter_corpus

    names = list(annotators)
    known = list_annotators(root)
    if names == ["all"]:
        names = known
    for name in names:
        if name not in known:
            raise InputError(f"unknown annotator {name!r}; known: {', '.join(known)}", path=root)
    skip = set(exclude)
    problems = warnings if warnings is not None else []
    out: dict[str, tuple[Document, list[Span]]] = {}
    for name in names:
        for key, doc, spans in iter_corpus(root, name, warnings=problems, sentences=False,
                                           sections=False):
            if key in skip:
                continue
            if key not in out:
                out[key] = (doc, [])
            out[key][1].extend(spans)
    if not out:
        raise InputError(f"no annotated document for {', '.join(names)}", path=root)
    return dict(sorted(out.items()))


def train_sentence_model(
    root: str | Path,
    annotators: Sequence[str] = ("roger-annotation",),
    *,
    exclude: Iterable[str] = (),
    params: dict[str, Any] | None = None,
    warnings: list[str] | None = None,
    corpus: dict[str, tuple[Document, list[Span]]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Any:
    """Fit a :class:`~clinex.rob.evidence.sentence_model.SentenceEvidenceModel`.

    Parameters
    ----------
    root : str or Path
        Tagtog export folder.
    annotators : sequence of str
        Whose spans to learn from (pooled); ``("all",)`` for every member.
    exclude : iterable of str
        Document ids to leave out.
    params : dict, optional
        Constructor parameters of the model.
    warnings : list of str, optional
        Receives reading problems.
    corpus : dict, optional
        An already loaded corpus (:func:`load_training_corpus`); ``exclude`` still applies.
    progress : callable, optional
        Called with a short status line.

    Returns
    -------
    SentenceEvidenceModel
        Fitted.

    Raises
    ------
    InputError
        See :func:`load_training_corpus`.
    """
    from clinex.rob.evidence.sentence_model import SentenceEvidenceModel

    if corpus is None:
        corpus = load_training_corpus(root, annotators, exclude=exclude, warnings=warnings)
    else:
        skip = set(exclude)
        corpus = {k: v for k, v in corpus.items() if k not in skip}
        if not corpus:
            raise InputError("no training document left", path=root)
    if progress is not None:
        progress(f"training on {len(corpus)} documents, "
                 f"{sum(len(s) for _, s in corpus.values())} spans")
    model = SentenceEvidenceModel(**(params or {}))
    docs = [d for d, _ in corpus.values()]
    spans = [s for _, s in corpus.values()]
    return model.fit(docs, spans)
