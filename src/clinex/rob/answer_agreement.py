"""Agreement of automated RoB 2 answers with an expert: PO_response and PO_extraction.

RoBuster's evaluation of automated (LLM) answers reports, per signalling question
(SQ) and per domain, the observed agreement with the expert on

* the **response** (``PO_response``): the share of (document, SQ) pairs whose
  predicted response equals the expert's;
* the **extracted supporting evidence** (``PO_extraction``): the share of
  (document, SQ) pairs where the expert marked evidence and at least one predicted
  evidence span matches one of the expert's spans.

clinex computes both for any predictions given as
:class:`~clinex.rob.types.TrialAssessment` (``clinex rob assess`` output, or any
model run through :func:`clinex.rob.assess.assess`), and adds the observed
agreement of the domain and overall risk-of-bias judgements where the gold has them.

Gold sources
------------
* a tagtog annotator folder, read with :func:`clinex.rob.iaa.load_annotator`:
  the responses are those of the SQs the annotator labelled, from the span labels
  (``1_1_ProbablyYes_Good`` -> ``PY``, ``2_1_No_Information`` -> ``NI``); when one
  document carries several labels for one SQ the most frequent response wins and a
  tie goes to the response of the label that comes **first in text order** (lowest
  start offset); the evidence is the labelled spans' texts; judgements are the
  document-level ``metas`` (RoB1..RoB5, overall_RoB) where the annotator gave them;
* a folder of clinex answer keys ``*.key.yaml`` (``id``, ``responses`` for all 22
  SQs including ``NA``, ``evidence`` SQ -> verbatim strings, ``domains``,
  ``overall``); the report is the ``.txt`` beside each key.

Counting
--------
* ``PO_response`` per SQ is over the documents where the gold has a response for
  that SQ (tagtog: the SQs labelled; keys: all 22, ``NA`` included) and a
  prediction exists; a question the prediction lacks counts as a disagreement.
  ``exact`` compares the six codes Y/PY/PN/N/NI/NA; ``folded`` first maps Y and PY
  to Yes, N and PN to No (RoBuster's labels fold this way), NI and NA unchanged.
* ``PO_extraction`` per SQ is over the (document, SQ) pairs where the gold has at
  least one evidence span; a pair is correct when at least one predicted evidence
  text of that SQ (the texts of the answer's evidence spans, whatever the response,
  ``NA`` included) fuzzy-matches at least one gold text: ``rapidfuzz.fuzz.partial_ratio``
  of the whitespace-normalised, case-folded texts >= :data:`THRESHOLD`. A pair with
  gold evidence and no predicted evidence counts as wrong.
* A domain pools its SQs' pairs; the overall row pools all pairs. Judgement
  agreement: per domain over the documents where the gold has that domain's level;
  overall over the documents with a gold overall level.
* Where the answers come from: over the predictions counted, the answers taken from
  the text (response not NA/NI, with evidence) whose first evidence span lies outside
  the Methods and Results (:func:`clinex.rob.assess.decided_outside`), out of those
  whose section is known; answers of a ``*.rob.json`` written before
  ``Evidence.section`` existed are counted apart as unknown.

Every figure comes with its ``n``; an observed agreement over ``n = 0`` is None.

References
----------
Dhrangadhariya A, et al. RoBuster: a corpus annotated with risk of bias text spans
in randomized controlled trials. Database 2023 (evaluation of LLM answers:
PO_response and PO_extraction per SQ and per domain).
Sterne JAC, et al. RoB 2: a revised tool for assessing risk of bias in randomised
trials. BMJ 2019;366:l4898 (responses, domains, judgements).
RapidFuzz documentation, ``rapidfuzz.fuzz.partial_ratio``:
https://rapidfuzz.github.io/RapidFuzz/Usage/fuzz.html
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from clinex.errors import ClinexError, EvaluationError, FormatError, InputError
from clinex.rob.types import TrialAssessment
from clinex.text import Document

__all__ = [
    "THRESHOLD",
    "RESPONSES",
    "GoldDocument",
    "SQAnswerAgreement",
    "DomainAnswerAgreement",
    "OverallAnswerAgreement",
    "AnswerAgreementReport",
    "fold_response",
    "normalise_evidence",
    "evidence_score",
    "evidence_matches",
    "read_answer_key",
    "load_answer_keys",
    "check_answer_key",
    "load_gold",
    "load_predictions",
    "assess_gold",
    "answer_agreement",
]

#: Minimum ``rapidfuzz.fuzz.partial_ratio`` (0-100) for a predicted evidence text to
#: match a gold one. ``partial_ratio`` scores the optimal alignment of the shorter
#: string inside the longer (RapidFuzz docs: "Searches for the optimal alignment of
#: the shorter string in the longer string and returns the fuzz.ratio for this
#: alignment"), so a short expert span inside a longer predicted sentence scores
#: 100; 80 tolerates the few characters by which PDF hyphenation, line breaks and
#: ligatures make the two texts differ, while unrelated sentences of the same
#: report score well below it.
THRESHOLD = 80.0

#: The end of the warning for a prediction without an answer key: listed, not a skipped
#: gold document (``clinex rob agreement`` still exits 0 for it).
IGNORED_PREDICTION = "has no gold; ignored"

#: The end of a warning about a key that is counted anyway (judgements that are not the
#: RoB 2 algorithm's on the key's own responses, an evidence quote not in the report).
COUNTED_AS_WRITTEN = "(counted as written)"

#: RoB 2 response codes (``NA``: the question is not asked).
RESPONSES = ("Y", "PY", "PN", "N", "NI", "NA")
_RISKS = ("Low", "Some concerns", "High")
_FOLD = {"Y": "Yes", "PY": "Yes", "N": "No", "PN": "No", "NI": "NI", "NA": "NA"}
_CODES = {"Yes": "Y", "Probably yes": "PY", "Probably no": "PN", "No": "N",
          "No Information": "NI"}
_WS = re.compile(r"\s+")
_FROZEN = ConfigDict(frozen=True, extra="forbid")


@dataclass
class GoldDocument:
    """The expert's answers for one document.

    Attributes
    ----------
    doc_id : str
    responses : dict of str to str
        SQ id -> RoB 2 code (Y/PY/PN/N/NI/NA); only the SQs the gold answers.
    evidence : dict of str to list of str
        SQ id -> the expert's evidence texts (non-empty strings).
    judgements : dict of str to str
        ``"D1"``..``"D5"``, ``"overall"`` -> risk level (those the gold gives).
    source : Path or None
        The report the predictions are made on (a key's ``.txt``, a tagtog
        ``plain.html``), None when unknown.
    """

    doc_id: str
    responses: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, list[str]] = field(default_factory=dict)
    judgements: dict[str, str] = field(default_factory=dict)
    source: Path | None = None


class SQAnswerAgreement(BaseModel):
    """Observed agreement on one signalling question.

    Attributes
    ----------
    sq : str
    domain : str
    n_response : int
        Documents where the gold has a response for this SQ and a prediction exists.
    po_response_exact : float or None
        Share of them with the same code (Y/PY/PN/N/NI/NA); None when n = 0.
    po_response_folded : float or None
        The same after folding PY into Y and PN into N.
    n_extraction : int
        Documents where the gold has evidence for this SQ (and a prediction exists).
    po_extraction : float or None
        Share of them where a predicted evidence text matches a gold one.
    """

    model_config = _FROZEN

    sq: str
    domain: str
    n_response: int
    po_response_exact: float | None
    po_response_folded: float | None
    n_extraction: int
    po_extraction: float | None


class DomainAnswerAgreement(BaseModel):
    """Observed agreement pooled over one domain's (document, SQ) pairs.

    Attributes
    ----------
    domain : str
        ``"D1"``..``"D5"``.
    name : str
        Short domain name.
    n_response, po_response_exact, po_response_folded, n_extraction, po_extraction
        As in :class:`SQAnswerAgreement`, pooled over the domain's SQs.
    n_judgement : int
        Documents where the gold gives this domain's risk level.
    po_judgement : float or None
        Share of them with the same predicted level.
    """

    model_config = _FROZEN

    domain: str
    name: str
    n_response: int
    po_response_exact: float | None
    po_response_folded: float | None
    n_extraction: int
    po_extraction: float | None
    n_judgement: int
    po_judgement: float | None


class OverallAnswerAgreement(BaseModel):
    """Observed agreement pooled over all (document, SQ) pairs.

    Attributes
    ----------
    n_response, po_response_exact, po_response_folded, n_extraction, po_extraction
        As in :class:`SQAnswerAgreement`, pooled over all SQs.
    n_judgement : int
        Documents where the gold gives an overall risk level.
    po_judgement : float or None
        Share of them with the same predicted overall level.
    """

    model_config = _FROZEN

    n_response: int
    po_response_exact: float | None
    po_response_folded: float | None
    n_extraction: int
    po_extraction: float | None
    n_judgement: int
    po_judgement: float | None


class AnswerAgreementReport(BaseModel):
    """Everything ``clinex rob agreement`` computes.

    Attributes
    ----------
    gold : str
        The gold input.
    predictions : str
        The predictions' folder, or ``"model:<name>"``.
    documents : int
        Gold documents that have a prediction (the ones counted).
    document_ids : tuple of str
        Their ids, sorted.
    threshold : float
        The evidence matching threshold (``partial_ratio``, 0-100).
    sqs : tuple of SQAnswerAgreement
        The 22 SQs in RoB 2 order.
    domains : tuple of DomainAnswerAgreement
        D1..D5.
    overall : OverallAnswerAgreement
    decided_outside : int
        Answers of the predictions counted that were taken from the text (response
        not NA/NI, with evidence) and whose first evidence span's section is known
        and is neither ``methods`` nor ``results``
        (:func:`clinex.rob.assess.decided_outside`).
    decided_total : int
        Such answers whose section is known.
    share_decided_outside : float or None
        ``decided_outside / decided_total``; None when ``decided_total`` is 0.
    decided_unknown : int
        Such answers whose section is unknown (``*.rob.json`` written before
        ``Evidence.section`` existed); in neither count above.
    warnings : tuple of str
        Problems met (bad key files skipped, documents without a prediction ...).
    """

    model_config = _FROZEN

    gold: str
    predictions: str
    documents: int
    document_ids: tuple[str, ...]
    threshold: float
    sqs: tuple[SQAnswerAgreement, ...]
    domains: tuple[DomainAnswerAgreement, ...]
    overall: OverallAnswerAgreement
    decided_outside: int = 0
    decided_total: int = 0
    share_decided_outside: float | None = None
    decided_unknown: int = 0
    warnings: tuple[str, ...] = ()


# --------------------------------------------------------------------------- matching


def fold_response(code: str | None) -> str | None:
    """RoBuster's folding of a RoB 2 code: Y, PY -> ``"Yes"``; N, PN -> ``"No"``.

    ``NI`` and ``NA`` are returned unchanged, None (no answer) stays None.

    Examples
    --------
    >>> fold_response("PY"), fold_response("PN"), fold_response("NI")
    ('Yes', 'No', 'NI')
    """
    return None if code is None else _FOLD.get(code, code)


def normalise_evidence(text: str) -> str:
    """Whitespace runs to one space, stripped, case-folded.

    Examples
    --------
    >>> normalise_evidence("  Computer-generated\\n random  LIST ")
    'computer-generated random list'
    """
    return _WS.sub(" ", text).strip().casefold()


def evidence_score(gold: str, predicted: str) -> float:
    """``rapidfuzz.fuzz.partial_ratio`` (0-100) of the two normalised texts.

    Parameters
    ----------
    gold, predicted : str
        Raw texts; both go through :func:`normalise_evidence`.

    Returns
    -------
    float
        0 when either is empty after normalisation.

    Examples
    --------
    >>> evidence_score("sealed opaque envelopes", "Allocation used sealed opaque envelopes.")
    100.0
    """
    from rapidfuzz import fuzz

    a, b = normalise_evidence(gold), normalise_evidence(predicted)
    if not a or not b:
        return 0.0
    return float(fuzz.partial_ratio(a, b))


def evidence_matches(gold: list[str], predicted: list[str], *, threshold: float = THRESHOLD) -> bool:
    """Whether any predicted text matches any gold text (:func:`evidence_score` >= threshold).

    Parameters
    ----------
    gold : list of str
        The expert's evidence texts for one (document, SQ).
    predicted : list of str
        The prediction's evidence texts for the same pair (may be empty: no match).
    threshold : float, default THRESHOLD
        In [0, 100].

    Returns
    -------
    bool
    """
    return any(evidence_score(g, p) >= threshold for g in gold for p in predicted)


# --------------------------------------------------------------------------- gold


def _sq_ids() -> tuple[str, ...]:
    from clinex.rob.schema import SQ_IDS

    return SQ_IDS


def _sq_key(value: Any) -> str:
    # an unquoted YAML key 1.1 is the float 1.1; str() gives the SQ id back
    return str(value).strip()


#: Report files looked for in an answer key's ``texts`` folder, in this order.
REPORT_SUFFIXES = (".txt", ".xml", ".nxml", ".pdf")


def read_answer_key(path: str | Path, *, texts: str | Path | None = None) -> GoldDocument:
    """Read one clinex answer key (``*.key.yaml``).

    Parameters
    ----------
    path : str or Path
        The key; its report is the ``.txt`` with the same stem beside it
        (``NN_slug.key.yaml`` -> ``NN_slug.txt``).
    texts : str or Path, optional
        Where the reports are when none sits beside the key: ``texts/<id>`` with the
        first suffix of :data:`REPORT_SUFFIXES` that exists (a CONSORT-TM article is
        ``<PMCID>.xml``). Keys and the published articles they judge can then live
        apart (the articles may not be redistributable).

    Returns
    -------
    GoldDocument
        ``responses`` for all 22 SQs, ``evidence`` (empty strings dropped),
        ``judgements`` from ``domains`` and ``overall`` where given, ``source`` the
        report (None when none exists).

    Raises
    ------
    InputError
        The file does not exist.
    FormatError
        Not YAML, not a mapping, or a bad field; the message names the file and the
        field (``responses.2.3``, ``evidence.1.1``, ``domains.D4``, ``overall``, ``id``).
    """
    from clinex.io.textfile import parse_yaml, read_text

    p = Path(path)
    data = parse_yaml(read_text(p), path=p)
    if not isinstance(data, dict):
        raise FormatError("an answer key must be a YAML mapping", path=p)
    doc_id = data.get("id")
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise FormatError("missing or empty document id", path=p, field="id")
    sq_ids = _sq_ids()
    raw = data.get("responses")
    if not isinstance(raw, dict):
        raise FormatError("expected a mapping of the 22 SQs to Y/PY/PN/N/NI/NA", path=p,
                          field="responses")
    responses: dict[str, str] = {}
    for k, v in raw.items():
        q = _sq_key(k)
        if q not in sq_ids:
            raise FormatError(f"unknown signalling question {q!r}; known: {', '.join(sq_ids)}",
                              path=p, field=f"responses.{q}")
        if not isinstance(v, str) or v.strip() not in RESPONSES:
            raise FormatError(f"{v!r} is not one of {', '.join(RESPONSES)} (quote it if YAML "
                              "read it as another type)", path=p, field=f"responses.{q}")
        responses[q] = v.strip()
    missing = [q for q in sq_ids if q not in responses]
    if missing:
        raise FormatError(f"no response for {', '.join(missing)} (all 22 SQs are needed, NA for "
                          "a question not asked)", path=p, field=f"responses.{missing[0]}")
    evidence: dict[str, list[str]] = {}
    raw_ev = data.get("evidence") or {}
    if not isinstance(raw_ev, dict):
        raise FormatError("expected a mapping of SQ to a list of strings", path=p, field="evidence")
    for k, v in raw_ev.items():
        q = _sq_key(k)
        if q not in sq_ids:
            raise FormatError(f"unknown signalling question {q!r}", path=p, field=f"evidence.{q}")
        items = [v] if isinstance(v, str) else v
        if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
            raise FormatError("expected a list of strings", path=p, field=f"evidence.{q}")
        quotes = [s for s in items if s.strip()]
        if quotes:
            evidence[q] = quotes
    judgements: dict[str, str] = {}
    raw_dom = data.get("domains") or {}
    if not isinstance(raw_dom, dict):
        raise FormatError("expected a mapping D1..D5 -> risk level", path=p, field="domains")
    for k, v in raw_dom.items():
        d = str(k).strip()
        if d not in ("D1", "D2", "D3", "D4", "D5"):
            raise FormatError(f"unknown domain {d!r}; known: D1, D2, D3, D4, D5", path=p,
                              field=f"domains.{d}")
        if v not in _RISKS:
            raise FormatError(f"{v!r} is not one of {', '.join(_RISKS)}", path=p,
                              field=f"domains.{d}")
        judgements[d] = v
    if data.get("overall") is not None:
        if data["overall"] not in _RISKS:
            raise FormatError(f"{data['overall']!r} is not one of {', '.join(_RISKS)}", path=p,
                              field="overall")
        judgements["overall"] = data["overall"]
    return GoldDocument(doc_id.strip(), responses, evidence, judgements,
                        _key_report(p, doc_id.strip(), texts))


def _key_report(key: Path, doc_id: str, texts: str | Path | None) -> Path | None:
    """The report of an answer key: the ``.txt`` beside it, else ``texts/<id><suffix>``."""
    txt = key.with_name(key.name[: -len(".key.yaml")] + ".txt") if key.name.endswith(".key.yaml") \
        else key.with_suffix(".txt")
    if txt.is_file():
        return txt
    if texts is not None:
        for suffix in REPORT_SUFFIXES:
            cand = Path(texts) / f"{doc_id}{suffix}"
            if cand.is_file():
                return cand
    return None


def load_answer_keys(
    folder: str | Path, *, texts: str | Path | None = None, warnings: list[str] | None = None
) -> dict[str, GoldDocument]:
    """Read every ``*.key.yaml`` of a folder (name order).

    Parameters
    ----------
    folder : str or Path
    texts : str or Path, optional
        Folder of the reports for keys without a ``.txt`` beside them
        (:func:`read_answer_key`).
    warnings : list of str, optional
        Receives one line per bad key file (its path and field, then ``; skipped``)
        and per repeated id; those files are skipped, never silently.

    Returns
    -------
    dict of str to GoldDocument
        By document id (``id``).

    Raises
    ------
    InputError
        Not a folder, or no ``*.key.yaml`` in it.
    """
    src = Path(folder)
    problems = warnings if warnings is not None else []
    if not src.is_dir():
        raise InputError("not a folder", path=src)
    files = sorted(src.glob("*.key.yaml"))
    if not files:
        raise InputError("no *.key.yaml answer keys", path=src)
    if texts is not None and not Path(texts).is_dir():
        raise InputError("--texts must be a folder of the reports", path=texts)
    def read_checked(f: Path) -> GoldDocument:
        g = read_answer_key(f, texts=texts)
        problems.extend(check_answer_key(g, f))
        return g

    return _read_each(files, read_checked, lambda g: g.doc_id, "field 'id'", "key", problems)


def check_answer_key(gold: GoldDocument, path: str | Path) -> list[str]:
    """What in a key contradicts itself or its report; the key is still counted as written.

    * a domain judgement that is not the RoB 2 algorithm's on the key's own responses
      (:func:`clinex.rob.algorithm.all_domain_risks`, RoB 2 guidance of 22 August 2019),
      an overall judgement that is not :func:`~clinex.rob.algorithm.overall_risk` of the
      key's domains;
    * an evidence quote that is not in the report (whitespace runs as one space, case
      folded), when the report is found.

    Parameters
    ----------
    gold : GoldDocument
    path : str or Path
        The key file (named in each message).

    Returns
    -------
    list of str
        One line per problem, ending with :data:`COUNTED_AS_WRITTEN`.
    """
    from clinex.errors import SchemaError
    from clinex.rob.algorithm import all_domain_risks, overall_risk

    out: list[str] = []
    try:
        domains = all_domain_risks(gold.responses)
    except SchemaError:
        return out
    for d, level in domains.items():
        if d in gold.judgements and gold.judgements[d] != level:
            out.append(f"{path}: field 'domains.{d}': {gold.judgements[d]!r} is not what the RoB 2 algorithm "
                       f"gives on the key's responses ({level!r}) {COUNTED_AS_WRITTEN}")
    given = {d: gold.judgements[d] for d in domains if d in gold.judgements}
    if "overall" in gold.judgements and len(given) == len(domains):
        want = overall_risk(given)
        if gold.judgements["overall"] != want:
            out.append(f"{path}: field 'overall': {gold.judgements['overall']!r} is not the overall judgement "
                       f"of the key's domains ({want!r}) {COUNTED_AS_WRITTEN}")
    if gold.source is not None and gold.evidence:
        try:
            from clinex.rob.assess import load_trial

            flat = re.sub(r"\s+", " ", load_trial(gold.source).text).casefold()
        except ClinexError:
            return out  # the report's own problem is reported when it is assessed
        for sq, quotes in gold.evidence.items():
            for q in quotes:
                if re.sub(r"\s+", " ", q).strip().casefold() not in flat:
                    out.append(f"{path}: field 'evidence.{sq}': {q[:60]!r} is not in the report "
                               f"{COUNTED_AS_WRITTEN}")
    return out



def _read_each(files: list[Path], read: Any, key: Any, what: str, kind: str, problems: list[str]) -> dict[str, Any]:
    """Read every file with ``read``; a file that fails, or whose ``key`` was already read,
    is reported in ``problems`` (naming the file) and skipped, never dropped silently."""
    out: dict[str, Any] = {}
    for f in files:
        try:
            item = read(f)
        except ClinexError as exc:
            problems.append(f"{exc}; skipped")
            continue
        k = key(item)
        if k in out:
            problems.append(f"{f}: {what} {k!r} already read from another {kind}; skipped")
            continue
        out[k] = item
    return out

def _tagtog_responses(ann: Path, document: Document) -> dict[str, str]:
    """SQ -> response of one tagtog document: most frequent label, ties -> first in text order."""
    from clinex.rob.formats.tagtog import parse_label, read_tagtog_annotations

    spans = read_tagtog_annotations(ann, document, align=True, warnings=[])  # already reported
    votes: dict[str, Counter[str]] = {}
    first: dict[tuple[str, str], int] = {}
    for s in spans:
        try:
            q, resp, _ = parse_label(str(s.label), fold=False)
        except ClinexError:
            continue
        code = _CODES[resp]
        votes.setdefault(q, Counter())[code] += 1
        first[(q, code)] = min(first.get((q, code), s.start), s.start)
    return {q: min(c, key=lambda r: (-c[r], first[(q, r)])) for q, c in sorted(votes.items())}


def load_gold(
    path: str | Path, *, texts: str | Path | None = None, warnings: list[str] | None = None
) -> dict[str, GoldDocument]:
    """Read the expert's answers: a folder of answer keys or a tagtog annotator folder.

    Parameters
    ----------
    path : str or Path
        A folder of ``*.key.yaml`` (:func:`load_answer_keys`) or a tagtog annotator
        folder (``ann.json/members/<name>``, read with
        :func:`clinex.rob.iaa.load_annotator`; tagtog offsets realigned to their
        text so that the evidence texts are the expert's).
    texts : str or Path, optional
        tagtog: the ``plain.html/pool`` folder (found beside an ancestor when
        omitted); answer keys: the folder of reports named by document id, for keys
        without a ``.txt`` beside them (:func:`read_answer_key`).
    warnings : list of str, optional
        Receives reading problems (bad key files and documents are skipped).

    Returns
    -------
    dict of str to GoldDocument

    Raises
    ------
    InputError
        The path does not exist, is neither kind of folder, tagtog texts are missing,
        or no document could be read.
    """
    from clinex.rob.formats.tagtog import doc_key
    from clinex.rob.iaa import _tagtog_dir, load_annotator

    src = Path(path)
    problems = warnings if warnings is not None else []
    if not src.is_dir():
        raise InputError("GOLD must be a folder (tagtog annotator or *.key.yaml answer keys)",
                         path=src)
    if any(src.glob("*.key.yaml")):
        out = load_answer_keys(src, texts=texts, warnings=problems)
    else:
        tag_dir = _tagtog_dir(src)
        if tag_dir is None:
            raise InputError("neither *.key.yaml answer keys nor a tagtog annotator folder "
                             "(*.ann.json, directly or in pool/)", path=src)
        docs = load_annotator(src, texts=texts, align=True, warnings=problems)
        anns = {doc_key(a): a for a in sorted(tag_dir.glob("*.ann.json"))}
        out = {}
        for key, ad in sorted(docs.items()):
            if ad.document is None:
                continue
            evidence: dict[str, list[str]] = {}
            for s in sorted(ad.spans, key=lambda s: s.start):
                if s.text.strip():
                    evidence.setdefault(str(s.label), []).append(s.text)
            source = ad.document.meta.get("source")
            out[key] = GoldDocument(
                key, _tagtog_responses(anns[key], ad.document), evidence, dict(ad.judgements),
                Path(source) if source else None,
            )
    if not out:
        raise InputError("no gold document could be read (see the warnings)", path=src)
    return out


# --------------------------------------------------------------------------- predictions


def load_predictions(folder: str | Path, *, warnings: list[str] | None = None) -> dict[str, TrialAssessment]:
    """Read a folder of ``*.rob.json`` assessments (``clinex rob assess`` output).

    Parameters
    ----------
    folder : str or Path
        A folder (its ``*.rob.json`` files, name order) or one ``.rob.json`` file.
    warnings : list of str, optional
        Receives one line per unreadable file or repeated document id (skipped).

    Returns
    -------
    dict of str to TrialAssessment
        By ``document_id``.

    Raises
    ------
    InputError
        No such path, or no ``*.rob.json`` in the folder.
    """
    from clinex.rob.report import read_json

    src = Path(folder)
    problems = warnings if warnings is not None else []
    if not src.exists():
        raise InputError("no such file or folder", path=src)
    files = [src] if src.is_file() else sorted(src.glob("*.rob.json"))
    if not files:
        raise InputError("no *.rob.json assessments (clinex rob assess output)", path=src)
    return _read_each(files, read_json, lambda ta: ta.document_id, "document", "file", problems)


def assess_gold(
    gold: Mapping[str, GoldDocument], model: Any, *, warnings: list[str] | None = None
) -> dict[str, TrialAssessment]:
    """Run an evidence model over the gold documents' reports, as ``clinex rob assess`` does.

    Parameters
    ----------
    gold : mapping of str to GoldDocument
        Each ``source`` is read with :func:`clinex.rob.assess.load_trial`.
    model : object with ``predict(document)``
        E.g. :func:`clinex.rob.assess.default_model` ``("cues")``.
    warnings : list of str, optional
        Receives one line per document without a report or that could not be read.

    Returns
    -------
    dict of str to TrialAssessment
        By gold document id.
    """
    from clinex.rob.assess import assess, load_trial

    problems = warnings if warnings is not None else []
    out: dict[str, TrialAssessment] = {}
    for key, g in sorted(gold.items()):
        if g.source is None:
            problems.append(f"{_not_assessed(key)}no report text beside its gold (.txt) or in --texts; not assessed")
            continue
        try:
            out[key] = assess(load_trial(g.source), model)
        except ClinexError as exc:
            problems.append(f"{_not_assessed(key)}{exc}; not assessed")
    return out


def _not_assessed(key: str) -> str:
    """The start of :func:`assess_gold`'s line for a gold document it could not assess;
    :func:`answer_agreement` adds no second line for such a document."""
    return f"document {key!r}: "


# --------------------------------------------------------------------------- agreement


def _po(agree: int, n: int) -> float | None:
    return agree / n if n else None


def _lookup(predictions: Mapping[str, TrialAssessment]) -> dict[str, TrialAssessment]:
    from clinex.rob.formats.tagtog import doc_key

    index: dict[str, TrialAssessment] = {}
    for k, ta in predictions.items():
        for name in (k, ta.document_id, doc_key(ta.document_id)):
            index.setdefault(name, ta)
    return index


def answer_agreement(
    gold: Mapping[str, GoldDocument],
    predictions: Mapping[str, TrialAssessment],
    *,
    threshold: float = THRESHOLD,
    gold_name: str = "",
    predictions_name: str = "",
    warnings: list[str] | None = None,
) -> AnswerAgreementReport:
    """PO_response (exact and folded) and PO_extraction per SQ, per domain and overall.

    Parameters
    ----------
    gold : mapping of str to GoldDocument
        The expert's answers by document id (:func:`load_gold`).
    predictions : mapping of str to TrialAssessment
        The automated answers, matched to gold documents by key, ``document_id`` or
        its tagtog :func:`~clinex.rob.formats.tagtog.doc_key`. Any model kind: ``clinex rob
        assess`` JSON (:func:`load_predictions`) or :func:`assess_gold`.
    threshold : float, default THRESHOLD
        Evidence matching threshold on ``partial_ratio``, in [0, 100].
    gold_name, predictions_name : str
        Recorded in the report.
    warnings : list of str, optional
        Earlier reading problems; the report adds one line per gold document without
        a prediction (not counted; none for a document :func:`assess_gold` already
        reported as not assessed) and per prediction without gold (ignored).

    Returns
    -------
    AnswerAgreementReport

    Raises
    ------
    InputError
        ``threshold`` outside [0, 100].
    EvaluationError
        No gold document has a prediction.

    References
    ----------
    Dhrangadhariya A, et al. RoBuster. Database 2023 (PO_response, PO_extraction).
    """
    from clinex.rob.assess import decided_outside, decided_sections
    from clinex.rob.schema import DOMAINS

    if not 0.0 <= threshold <= 100.0:
        raise InputError(f"threshold must be in [0, 100], got {threshold}", field="threshold")
    problems = list(warnings or [])
    index = _lookup(predictions)
    matched: dict[str, TrialAssessment] = {}
    for key in sorted(gold):
        ta = index.get(key)
        if ta is None:
            if not any(w.startswith(_not_assessed(key)) for w in problems):  # reported once
                problems.append(f"document {key!r} has no prediction; not counted")
        else:
            matched[key] = ta
    used = {id(ta) for ta in matched.values()}
    for _, ta in sorted(predictions.items(), key=lambda kv: kv[0]):
        if id(ta) not in used:
            problems.append(f"prediction {ta.document_id!r} {IGNORED_PREDICTION}")
    if not matched:
        raise EvaluationError(f"no gold document has a prediction ({len(gold)} gold, "
                              f"{len(predictions)} predicted)", path=predictions_name or None)

    n_r: Counter[str] = Counter()
    ok_exact: Counter[str] = Counter()
    ok_fold: Counter[str] = Counter()
    n_e: Counter[str] = Counter()
    ok_e: Counter[str] = Counter()
    n_j: Counter[str] = Counter()
    ok_j: Counter[str] = Counter()
    outside = decided = unknown = 0
    for key, ta in matched.items():
        g = gold[key]
        k, n = decided_outside(ta)
        outside, decided = outside + k, decided + n
        unknown += len(decided_sections(ta)) - n
        answers = {a.sq: a for d in ta.domains for a in d.answers}
        for q, resp in g.responses.items():
            pred = answers[q].response if q in answers else None
            n_r[q] += 1
            ok_exact[q] += pred == resp
            ok_fold[q] += fold_response(pred) == fold_response(resp)
        for q, texts in g.evidence.items():
            if not texts:
                continue
            pred_texts = [ev.span.text for ev in answers[q].evidence] if q in answers else []
            n_e[q] += 1
            ok_e[q] += evidence_matches(texts, pred_texts, threshold=threshold)
        risks: dict[str, str] = {d.domain: d.risk for d in ta.domains}
        risks["overall"] = ta.overall
        for scope, level in g.judgements.items():
            if scope in risks:
                n_j[scope] += 1
                ok_j[scope] += risks[scope] == level

    def pooled(qs) -> dict[str, Any]:
        nr = sum(n_r[q] for q in qs)
        ne = sum(n_e[q] for q in qs)
        return dict(
            n_response=nr,
            po_response_exact=_po(sum(ok_exact[q] for q in qs), nr),
            po_response_folded=_po(sum(ok_fold[q] for q in qs), nr),
            n_extraction=ne,
            po_extraction=_po(sum(ok_e[q] for q in qs), ne),
        )

    sqs = tuple(SQAnswerAgreement(sq=q, domain=d.id, **pooled([q]))
                for d in DOMAINS for q in d.questions)
    domains = tuple(
        DomainAnswerAgreement(domain=d.id, name=d.short_name, **pooled(d.questions),
                              n_judgement=n_j[d.id], po_judgement=_po(ok_j[d.id], n_j[d.id]))
        for d in DOMAINS
    )
    overall = OverallAnswerAgreement(
        **pooled([q for d in DOMAINS for q in d.questions]),
        n_judgement=n_j["overall"], po_judgement=_po(ok_j["overall"], n_j["overall"]),
    )
    return AnswerAgreementReport(
        gold=gold_name, predictions=predictions_name, documents=len(matched),
        document_ids=tuple(sorted(matched)), threshold=threshold, sqs=sqs, domains=domains,
        overall=overall, decided_outside=outside, decided_total=decided,
        share_decided_outside=_po(outside, decided), decided_unknown=unknown,
        warnings=tuple(problems),
    )
