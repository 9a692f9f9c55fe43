"""The expert's answers for :mod:`~clinex.rob.answer_agreement`: clinex answer keys and
tagtog annotator folders read into :class:`GoldDocument`.

* a folder of clinex answer keys ``*.key.yaml`` (``id``, ``responses`` for all 22
  SQs including ``NA``, ``evidence`` SQ -> verbatim strings, ``domains``,
  ``overall``; :func:`read_answer_key`, :func:`load_answer_keys`); the report is the
  ``.txt`` beside each key; :func:`check_answer_key` lists what in a key contradicts
  itself or its report;
* a tagtog annotator folder (:func:`clinex.rob.iaa.load_annotator`): the responses of
  the SQs the annotator labelled, the most frequent label per SQ, a tie to the label
  first in text order; the evidence is the labelled spans' texts; judgements are the
  document-level ``metas``.

:func:`load_gold` reads either. Every public name is re-exported by
:mod:`~clinex.rob.answer_agreement`.

References
----------
Sterne JAC, et al. RoB 2: a revised tool for assessing risk of bias in randomised
trials. BMJ 2019;366:l4898 (responses, domains, judgements).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinex.errors import ClinexError, FormatError, InputError
from clinex.text import Document

__all__ = [
    "RESPONSES",
    "COUNTED_AS_WRITTEN",
    "REPORT_SUFFIXES",
    "GoldDocument",
    "read_answer_key",
    "load_answer_keys",
    "check_answer_key",
    "load_gold",
]

#: The end of a warning about a key that is counted anyway (judgements that are not the
#: RoB 2 algorithm's on the key's own responses, an evidence quote not in the report).
COUNTED_AS_WRITTEN = "(counted as written)"

#: RoB 2 response codes (``NA``: the question is not asked).
RESPONSES = ("Y", "PY", "PN", "N", "NI", "NA")
_RISKS = ("Low", "Some concerns", "High")
_CODES = {"Yes": "Y", "Probably yes": "PY", "Probably no": "PN", "No": "N",
          "No Information": "NI"}


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
    doc_id = _key_id(data, p)
    sq_ids = _sq_ids()
    responses = _key_responses(data, p, sq_ids)
    evidence = _key_evidence(data, p, sq_ids)
    judgements = _key_judgements(data, p)
    return GoldDocument(doc_id, responses, evidence, judgements, _key_report(p, doc_id, texts))


def _key_id(data: dict, p: Path) -> str:
    """The key's ``id`` (an integer read as its digits), stripped.

    Raises
    ------
    FormatError
        Missing, empty or not a string.
    """
    doc_id = data.get("id")
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise FormatError("missing or empty document id", path=p, field="id")
    return doc_id.strip()


def _key_responses(data: dict, p: Path, sq_ids: tuple[str, ...]) -> dict[str, str]:
    """The key's ``responses``: one of :data:`RESPONSES` for each of the 22 SQs.

    Raises
    ------
    FormatError
        Not a mapping, an unknown SQ, a code not in :data:`RESPONSES`, or an SQ missing.
    """
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
    return responses


def _key_evidence(data: dict, p: Path, sq_ids: tuple[str, ...]) -> dict[str, list[str]]:
    """The key's ``evidence``: SQ -> its non-blank quotes (a single string is one quote).

    Raises
    ------
    FormatError
        Not a mapping, an unknown SQ, or a value that is not a string or a list of strings.
    """
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
    return evidence


def _key_judgements(data: dict, p: Path) -> dict[str, str]:
    """The key's ``domains`` (D1..D5) and ``overall`` risk levels, those given.

    Raises
    ------
    FormatError
        ``domains`` not a mapping, an unknown domain, or a level that is not a RoB 2 risk.
    """
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
    return judgements


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
    src = Path(path)
    problems = warnings if warnings is not None else []
    if not src.is_dir():
        raise InputError("GOLD must be a folder (tagtog annotator or *.key.yaml answer keys)",
                         path=src)
    if any(src.glob("*.key.yaml")):
        out = load_answer_keys(src, texts=texts, warnings=problems)
    else:
        out = _tagtog_gold(src, texts, problems)
    if not out:
        raise InputError("no gold document could be read (see the warnings)", path=src)
    return out


def _tagtog_gold(src: Path, texts: str | Path | None, problems: list[str]) -> dict[str, GoldDocument]:
    """The gold of a tagtog annotator folder: responses by :func:`_tagtog_responses`, the
    labelled spans' texts as evidence (text order), the document-level judgements.

    Raises
    ------
    InputError
        ``src`` is no tagtog annotator folder (no ``*.ann.json``, directly or in ``pool/``).
    """
    from clinex.rob.annotator import _tagtog_dir, load_annotator
    from clinex.rob.formats.tagtog import doc_key

    tag_dir = _tagtog_dir(src)
    if tag_dir is None:
        raise InputError("neither *.key.yaml answer keys nor a tagtog annotator folder "
                         "(*.ann.json, directly or in pool/)", path=src)
    docs = load_annotator(src, texts=texts, align=True, warnings=problems)
    anns = {doc_key(a): a for a in sorted(tag_dir.glob("*.ann.json"))}
    out: dict[str, GoldDocument] = {}
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
    return out
