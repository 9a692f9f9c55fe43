"""ICH E2B(R3) individual case safety reports (ICSRs) from a ``clinex batch pv`` run.

One ICSR per literature case: a record of the run (a MEDLINE citation, whose id is its
PMID, or a JSON-lines record) with at least one *asserted* ``Adverse_event``
(:func:`clinex.pv.counts.is_asserted`: not negated; a speculated event counts) that names
a drug and a reaction. The reports are written in the HL7 v3 message structure of
E2B(R3): ``PORR_IN049016UV`` messages inside the batch wrapper ``MCCI_IN200100UV01``,
modelled on the FDA's example instances (``FAERS2022Scenario*.xml``), element numbers as
comments beside the elements, as there.

What is filled, and how, is data: ``resources/pv/e2b/elements.json`` lists every element
clinex fills (number, name, maximum length and data type as the FDA's
``icsr_data_elements.csv`` gives them) and the required elements it leaves to the sender
(MedDRA coding above all: MedDRA needs a licence). ``docs/pv.md`` (*E2B(R3) export*)
lists both. ``tests/pv/test_pv_e2b.py`` checks every element written against the CSV's
XPaths, lengths, data types and allowed values, and against the FDA's rejection rules.

The output is a draft for the sender's safety database or gateway, not a finished
submission: E.i.2.1a/b (MedDRA version and code) have no allowed nullFlavor, so a report
can be sent only once its reactions are coded.

References
----------
ICH E2B(R3) Implementation Guide, Electronic Transmission of Individual Case Safety
Reports, v5.02 (2016). FDA, *Specifications for Preparing and Submitting Electronic
ICSRs and ICSR Attachments* and its example instances (2022-2024).
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from pydantic import BaseModel, ConfigDict, Field

from clinex.errors import ClinexError, FormatError, InputError
from clinex.pv.run_folder import check_pv_run, sql_str
from clinex.pv.types import Event, SentenceEvents

__all__ = [
    "BATCH_RECEIVER",
    "MESSAGE_RECEIVER",
    "ICSRS_PER_FILE",
    "Case",
    "Drug",
    "E2BSettings",
    "E2BSummary",
    "Patient",
    "Reaction",
    "age_group_of",
    "age_of",
    "build_batch",
    "case_from_record",
    "element_rules",
    "iter_run_cases",
    "sex_of",
    "write_e2b",
]

BATCH_RECEIVER = "ZZFDA"
"""N.1.4: the FDA's postmarket route (rejection rule R0004)."""
MESSAGE_RECEIVER = "CDER"
"""N.2.r.3: with N.1.4 = ZZFDA it must be CDER (rejection rule R0006)."""
ICSRS_PER_FILE = 100
"""Default number of ICSRs (``PORR_IN049016UV`` messages) per batch file."""
DEFAULT_SENDER_ORG = "UNSPECIFIED SENDER"
"""C.3.2 when ``--sender-org`` is not given (a warning says so)."""

_HL7 = "urn:hl7-org:v3"
_XSI = "http://www.w3.org/2001/XMLSchema-instance"
_SCHEMA_LOCATION = ("urn:hl7-org:v3 https://www.accessdata.fda.gov/icsr/schema/cvm/schemas/vich/"
                    "multicacheschemas/MCCI_IN200100UV01.xsd")
_UUID_NAMESPACE = uuid.UUID("4a7f0c2e-5b0e-4c4b-9a55-0e2b3c1e9d10")  # clinex's, for deterministic ids

# code systems (OIDs) of the ICH E2B(R3) implementation guide, as in the FDA examples
OID_BATCH_NUMBER = "2.16.840.1.113883.3.989.2.1.3.22"
OID_MESSAGE_ID = "2.16.840.1.113883.3.989.2.1.3.1"  # N.2.r.1 and C.1.1
OID_WORLDWIDE_ID = "2.16.840.1.113883.3.989.2.1.3.2"  # C.1.8.1
OID_BATCH_SENDER = "2.16.840.1.113883.3.989.2.1.3.13"
OID_BATCH_RECEIVER = "2.16.840.1.113883.3.989.2.1.3.14"
OID_MESSAGE_SENDER = "2.16.840.1.113883.3.989.2.1.3.11"
OID_MESSAGE_RECEIVER = "2.16.840.1.113883.3.989.2.1.3.12"
OID_MESSAGE_TYPE = "2.16.840.1.113883.3.989.2.1.1.1"
OID_REPORT_TYPE = "2.16.840.1.113883.3.989.2.1.1.2"
OID_FIRST_SENDER = "2.16.840.1.113883.3.989.2.1.1.3"
OID_QUALIFICATION = "2.16.840.1.113883.3.989.2.1.1.6"
OID_SENDER_TYPE = "2.16.840.1.113883.3.989.2.1.1.7"
OID_STUDY_TYPE = "2.16.840.1.113883.3.989.2.1.1.8"
OID_AGE_GROUP = "2.16.840.1.113883.3.989.2.1.1.9"
OID_OUTCOME = "2.16.840.1.113883.3.989.2.1.1.11"
OID_DRUG_ROLE = "2.16.840.1.113883.3.989.2.1.1.13"
OID_ROUTE = "2.16.840.1.113883.3.989.2.1.1.14"
OID_OBSERVATION = "2.16.840.1.113883.3.989.2.1.1.19"
OID_ORGANIZER = "2.16.840.1.113883.3.989.2.1.1.20"
OID_ASSIGNED_ROLE = "2.16.840.1.113883.3.989.2.1.1.21"
OID_RELATED_INVESTIGATION = "2.16.840.1.113883.3.989.2.1.1.22"
OID_CHARACTERISTIC = "2.16.840.1.113883.3.989.2.1.1.23"
OID_DOCUMENT = "2.16.840.1.113883.3.989.2.1.1.27"
OID_MEDDRA = "2.16.840.1.113883.6.163"
OID_COUNTRY = "1.0.3166.1.2.2"
OID_SEX = "1.0.5218"

_SERIOUSNESS = (  # E.i.3.2a-f: observation code, displayName
    ("34", "resultsInDeath"),
    ("21", "isLifeThreatening"),
    ("33", "requiresInpatientHospitalization"),
    ("35", "resultsInPersistentOrSignificantDisability"),
    ("12", "congenitalAnomalyBirthDefect"),
    ("26", "otherMedicallyImportantCondition"),
)
_AGE_GROUPS = {"0": "Foetus", "1": "Neonate", "2": "Infant", "3": "Child", "4": "Adolescent",
               "5": "Adult", "6": "Elderly"}
_STUDY_TYPES = {"1": "Clinical trials", "3": "Other studies"}

# XML 1.0 forbids most control characters; a record's text may hold them
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


# --- the elements clinex fills (data) -----------------------------------------------------
class ElementRule(BaseModel):
    """One E2B(R3) data element clinex fills (``resources/pv/e2b/elements.json``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    max_length: int | None = Field(default=None, ge=1)
    data_type: str
    filled: str = Field(pattern="^(always|when stated)$")
    how: str


class _ElementFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    comment: str = Field(alias="_comment")
    id: str
    elements: dict[str, ElementRule]
    left_to_user: dict[str, str]


@lru_cache(maxsize=1)
def element_rules() -> _ElementFile:
    """The shipped element list (``resources/pv/e2b/elements.json``), validated.

    Returns
    -------
    object
        ``.elements``: element number -> :class:`ElementRule`; ``.left_to_user``:
        element number -> why the sender fills it.

    Raises
    ------
    FormatError
        The file does not follow its schema (names the file and the field).
    """
    path = resources.files("clinex.resources") / "pv" / "e2b" / "elements.json"
    try:
        return _ElementFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except ValueError as exc:  # json.JSONDecodeError and pydantic.ValidationError
        raise FormatError(f"not a valid element list ({str(exc).splitlines()[0]})", path=str(path)) from None


def _fit(text: str, element: str) -> str:
    """``text`` cleaned for XML and cut to the element's maximum length (an ellipsis marks a cut)."""
    text = _NOT_XML.sub(" ", text)
    limit = element_rules().elements[element].max_length
    if limit is not None and len(text) > limit:
        text = text[: limit - 1].rstrip() + "\u2026"
    return text


# --- cases: what one ICSR says ---------------------------------------------------------------
_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Drug(BaseModel):
    """One suspect drug (G.k).

    Attributes
    ----------
    text : str
        As written (G.k.2.2).
    substances : tuple of str
        The drug gazetteer's canonical names of the substances the text names
        (G.k.2.3.r.1), e.g. ``("Amoxicillin", "Clavulanic acid")``; empty when unknown.
    dosage, route : str or None
        The Treatment's Dosage / Route text (G.k.4.r.8 / G.k.4.r.10.1), when its event names
        this drug only.
    indications : tuple of str
        The Treatment's Disorder texts (G.k.7.r.1).
    """

    model_config = _FROZEN

    text: str
    substances: tuple[str, ...] = ()
    dosage: str | None = None
    route: str | None = None
    indications: tuple[str, ...] = ()


class Reaction(BaseModel):
    """One reaction (E.i): the Effect as written, and what its words say of seriousness."""

    model_config = _FROZEN

    text: str
    fatal: bool = False
    life_threatening: bool = False


class Patient(BaseModel):
    """The patient (D), as far as the events' Subjects state it.

    Attributes
    ----------
    age : (str, str) or None
        D.2.2a / D.2.2b: the number and its UCUM unit (``("66", "a")``).
    age_group : str or None
        D.2.3 code (``"0"`` foetus ... ``"6"`` elderly), from the words of the article.
    sex : {"1", "2"} or None
        D.5: male / female.
    history : tuple of str
        D.7.2: the Subject's Disorder texts.
    """

    model_config = _FROZEN

    age: tuple[str, str] | None = None
    age_group: str | None = None
    sex: str | None = None
    history: tuple[str, ...] = ()


class Case(BaseModel):
    """One literature case: the content of one ICSR."""

    model_config = _FROZEN

    record_id: str
    source: str = ""
    text: str
    pmid: str | None = None
    title: str | None = None
    year: int | None = None
    study_type: str | None = None
    patient: Patient = Patient()
    drugs: tuple[Drug, ...] = Field(min_length=1)
    reactions: tuple[Reaction, ...] = Field(min_length=1)

    def citation(self) -> str:
        """C.4.r.1: title and year of a MEDLINE citation, then ``PMID: n`` (at most 500 characters)."""
        tail = f"PMID: {self.pmid}." if self.pmid else f"clinex record {self.record_id}" + (
            f" of {Path(self.source).name}" if self.source else "") + "."
        head = " ".join(x for x in ((self.title or "").strip(), f"{self.year}." if self.year else "") if x)
        limit = element_rules().elements["C.4.r.1"].max_length or 500
        room = limit - len(tail) - 1
        if len(head) > room:
            head = head[: max(0, room - 1)].rstrip() + "\u2026"
        return _NOT_XML.sub(" ", f"{head} {tail}" if head else tail)


# --- reading the Subject's words ----------------------------------------------------------------
_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split())}
_NUMBER_WORDS.update({w: 10 * (i + 2) for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split())})
_UNITS = {"year": "a", "years": "a", "yr": "a", "yrs": "a", "y": "a", "month": "mo", "months": "mo", "mo": "mo",
          "mos": "mo", "week": "wk", "weeks": "wk", "wk": "wk", "wks": "wk", "day": "d", "days": "d", "d": "d",
          "hour": "h", "hours": "h", "hr": "h", "hrs": "h", "h": "h"}
_NUMBER = r"(\d{1,3}(?:\.\d)?|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?|" \
          r"zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|" \
          r"seventeen|eighteen|nineteen)"
_AGE_UNIT = re.compile(_NUMBER + r"\s*-?\s*(years?|yrs?|y|months?|mos?|weeks?|wks?|days?|d|hours?|hrs?|h)\b"
                       r"(?:\s*-?\s*old)?", re.IGNORECASE)
_AGE_AGED = re.compile(r"\baged?\s+" + _NUMBER + r"\b(?!\s*(?:-|to|and|or)\s*\d)", re.IGNORECASE)
_DECADE = re.compile(r"\b(?:in\s+(?:his|her|their)\s+)?(?:early\s+|mid\s+|late\s+)?([1-9])0'?s\b", re.IGNORECASE)
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_NOT_ONE_AGE = re.compile(r"gestation|\bmean\b|\bmedian\b|\bover\b|\bunder\b|\babove\b|\bbelow\b|\bolder\b|"
                          r"\byounger\b|[<>\u2264\u2265]|\bbetween\b|\brange", re.IGNORECASE)


def _number(word: str) -> str | None:
    word = word.lower().replace(" ", "-")
    if word[0].isdigit():
        return word.rstrip("0").rstrip(".") if "." in word else word
    tens, _, unit = word.partition("-")
    if tens in _NUMBER_WORDS and (not unit or unit in _NUMBER_WORDS):
        return str(_NUMBER_WORDS[tens] + (_NUMBER_WORDS[unit] if unit else 0))
    return None


def age_of(text: str) -> tuple[str, str] | None:
    """D.2.2a / D.2.2b from an Age text: ``(number, UCUM unit)``, or None unless one age is stated.

    Parameters
    ----------
    text : str
        An Age argument (``"66-year-old"``, ``"3 months"``, ``"aged 70"``, ``"in her 60s"``).

    Returns
    -------
    (str, str) or None
        ``("66", "a")``; a decade gives unit ``"10.a"`` (``"in her 60s"`` -> ``("6", "10.a")``).
        Ranges, several numbers, means and bounds ("over 50", "10-15 years") give None.

    Examples
    --------
    >>> age_of("66-year-old"), age_of("3 months"), age_of("aged 70"), age_of("10-15 years")
    (('66', 'a'), ('3', 'mo'), ('70', 'a'), None)
    >>> age_of("sixty years old"), age_of("in her 60s"), age_of("elderly")
    (('60', 'a'), ('6', '10.a'), None)
    """
    if _NOT_ONE_AGE.search(text) or len(_DIGITS.findall(text)) > 1:
        return None
    found = [(m.group(1), _UNITS[m.group(2).lower()]) for m in _AGE_UNIT.finditer(text)]
    found += [(m.group(1), "a") for m in _AGE_AGED.finditer(text)]
    found += [(m.group(1), "10.a") for m in _DECADE.finditer(text)]
    ages = {(n, unit) for n, unit in ((_number(w), u) for w, u in found) if n is not None and len(n) <= 5}
    return ages.pop() if len(ages) == 1 else None


_GROUP_WORDS = (  # D.2.3 code -> the words an article uses (checked in this order)
    ("0", r"foetus|fetus|foetal|fetal"),
    ("1", r"neonates?|neonatal|newborns?|premature infants?|preterm infants?"),
    ("2", r"infants?|bab(?:y|ies)|toddlers?"),
    ("4", r"adolescents?|adolescence|teenagers?|teenage|teens?"),
    ("3", r"child|children|childhood|paediatric|pediatric"),
    ("6", r"elderly|geriatric|senile|older adults?|aged patients?"),
    ("5", r"adults?|middle[- ]aged"),
)
_GROUP_RE = [(code, re.compile(rf"\b(?:{words})\b", re.IGNORECASE)) for code, words in _GROUP_WORDS]


def age_group_of(text: str) -> str | None:
    """D.2.3 from the words of an Age or Subject text: ``"0"`` foetus ... ``"6"`` elderly, or None.

    Examples
    --------
    >>> age_group_of("elderly"), age_group_of("an 8-month-old infant"), age_group_of("a 66-year-old man")
    ('6', '2', None)
    """
    for code, pattern in _GROUP_RE:
        if pattern.search(text):
            return code
    return None


_MALE = re.compile(r"\b(?:man|men|male|males|boys?|gentlem[ae]n|father|husband|sons?|brothers?)\b", re.IGNORECASE)
_FEMALE = re.compile(r"\b(?:woman|women|female|females|girls?|lad(?:y|ies)|mother|wife|daughters?|sisters?|"
                     r"pregnant|pregnancy)\b", re.IGNORECASE)
_HE = re.compile(r"^(?:he|him|his)$", re.IGNORECASE)
_SHE = re.compile(r"^(?:she|her|hers)$", re.IGNORECASE)


def sex_of(text: str, *, pronouns: bool = False) -> str | None:
    """D.5 from a Gender or Subject text: ``"1"`` male, ``"2"`` female, None if neither or both.

    Parameters
    ----------
    text : str
    pronouns : bool, default False
        Also read a text that is only a pronoun (a Gender argument "she").

    Examples
    --------
    >>> sex_of("A 66-year-old man"), sex_of("women"), sex_of("4 males and 1 female"), sex_of("she", pronouns=True)
    ('1', '2', None, '2')
    """
    male, female = bool(_MALE.search(text)), bool(_FEMALE.search(text))
    if pronouns:
        male = male or bool(_HE.match(text.strip()))
        female = female or bool(_SHE.match(text.strip()))
    return "1" if male and not female else "2" if female and not male else None


_FATAL = re.compile(r"\b(?:fatal|fatality|death|deaths|died|lethal)\b", re.IGNORECASE)
_ARTICLE = re.compile(r"^\s*(?:a|an|the)\s+", re.IGNORECASE)
_LIFE_THREATENING = re.compile(r"\blife[- ]threatening\b", re.IGNORECASE)
_TRIAL_TYPES = re.compile(r"^(?:clinical trial\b.*|randomized controlled trial|controlled clinical trial|"
                          r"pragmatic clinical trial|equivalence trial|adaptive clinical trial)$", re.IGNORECASE)
_STUDY_TYPES_OTHER = re.compile(r"^observational study$", re.IGNORECASE)
_PMID_LIKE = re.compile(r"^[1-9]\d{4,8}$")  # a JSON-lines id of 5-9 digits is taken as a PMID


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


def _one(values: Iterable[Any]) -> Any:
    found = set(v for v in values if v is not None)
    return found.pop() if len(found) == 1 else None


@lru_cache(maxsize=4096)
def _substances(text: str) -> tuple[str, ...]:
    """The drug gazetteer's canonical names of the drugs named in ``text``, in text order."""
    from clinex.pv.features import tokenize
    from clinex.pv.gazetteer import find_drugs

    words = [text[s:e] for s, e in tokenize(text)]
    matches = sorted(find_drugs(words), key=lambda m: m[1])
    names: list[str] = []
    for data, _start, _end in matches:
        name = str(data.get("name") or "").strip()
        if name and name.casefold() not in {n.casefold() for n in names}:
            names.append(name)
    return tuple(names)


def _subs(ev: Event, main: str, role: str) -> list[str]:
    return [a.span.text for a in ev.sub_arguments.get(main, ()) if a.role == role]


#: Drug mentions that are never a suspect drug of an ICSR: placebo and vehicles, bare
#: numbers, species and words that name no product ("substance", "drug"). The model tags
#: them as Drug now and then (fresh-user QA on BC5CDR: "placebo" and "5" became suspects);
#: ICH E2B(R3) G.k asks for the medicinal product the reporter suspects.
_NOT_A_SUSPECT = re.compile(
    r"^\W*(?:(?:matching |identical )?placebos?|vehicle|saline|sham|control|controls|substances?|drugs?|agents?|"
    r"medications?|compounds?|treatments?|therapy|human|humans|rats?|mice|mouse|dogs?|rabbits?|"
    r"[\d.,\s%/-]+)\W*$", re.I)


def case_from_record(item: SentenceEvents, *, source: str = "", meta: dict[str, Any] | None = None,
                     substances: Callable[[str], Sequence[str]] = _substances) -> Case | None:
    """The literature case of one record, or None when it has none.

    A record holds a case when some asserted ``Adverse_event`` (not negated) names a drug
    (a Treatment's Drug or a Combination drug) and has an Effect. The case gathers every
    such event: each distinct drug is a suspect drug, each distinct Effect a reaction, and
    the Subjects' Age and Gender give the patient when they agree (otherwise unknown).

    Parameters
    ----------
    item : SentenceEvents
        The record with its events (a batch row's ``phee_json``).
    source : str, default ""
        The input file it came from.
    meta : dict, optional
        A MEDLINE citation's ``meta_json`` (``pmid``, ``year``, ``title_end``,
        ``publication_types``); without one a record id of 5 to 9 digits is taken as the PMID.
    substances : callable, default the drug gazetteer
        ``text -> canonical substance names`` (tests pass their own).

    Returns
    -------
    Case or None
    """
    from clinex.pv.counts import is_asserted

    events = [ev for ev in item.events if ev.event_type == "Adverse_event" and is_asserted(ev)]
    drugs: dict[str, Drug] = {}
    reactions: dict[str, Reaction] = {}
    ages, groups, sexes, history = [], [], [], []
    for ev in events:
        effects = [a.span.text for a in ev.main("Effect") if a.span.text.strip()]
        named = [a.span.text for a in ev.sub_arguments.get("Treatment", ()) if a.role == "Drug"]
        named += [d.span.text for c in ev.combinations for d in c.drugs]
        named = list(dict.fromkeys(t for t in named if t.strip() and not _NOT_A_SUSPECT.search(t)))
        if not effects or not named:
            continue
        died = bool(_FATAL.search(ev.trigger.text))  # "died of hepatic failure": the trigger says it
        for text in effects:
            reactions.setdefault(_key(_ARTICLE.sub("", text)), Reaction(
                text=text, fatal=died or bool(_FATAL.search(text)),
                life_threatening=bool(_LIFE_THREATENING.search(text))))
        only = len(named) == 1
        dosage = "; ".join(_subs(ev, "Treatment", "Dosage")) or None
        route = "; ".join(_subs(ev, "Treatment", "Route")) or None
        indications = tuple(dict.fromkeys(_subs(ev, "Treatment", "Disorder")))
        for text in named:
            names = tuple(substances(text))
            key = "|".join(sorted(n.casefold() for n in names)) or _key(text)
            old = drugs.get(key)
            drugs[key] = Drug(
                text=old.text if old else text, substances=names,
                dosage=(old.dosage if old else None) or (dosage if only else None),
                route=(old.route if old else None) or (route if only else None),
                indications=tuple(dict.fromkeys((*(old.indications if old else ()), *indications))))
        subject = " ".join(a.span.text for a in ev.main("Subject"))
        age_texts = _subs(ev, "Subject", "Age")
        ages.extend(age_of(t) for t in age_texts or [subject])
        groups.extend(age_group_of(t) for t in [*age_texts, subject])
        genders = _subs(ev, "Subject", "Gender")
        sexes.extend(sex_of(t, pronouns=True) for t in genders or [subject])
        history.extend(_subs(ev, "Subject", "Disorder"))
    if not drugs or not reactions:
        return None
    meta = meta or {}
    pmid = str(meta["pmid"]) if meta.get("pmid") else (item.id if _PMID_LIKE.match(item.id) else None)
    title_end = meta.get("title_end")
    title = item.text[:title_end].strip() if isinstance(title_end, int) and 0 < title_end <= len(item.text) else None
    year = meta.get("year") if isinstance(meta.get("year"), int) else None
    types = [str(t) for t in meta.get("publication_types") or ()]
    study = "1" if any(_TRIAL_TYPES.match(t) for t in types) else "3" if any(
        _STUDY_TYPES_OTHER.match(t) for t in types) else None
    return Case(
        record_id=item.id, source=source, text=item.text, pmid=pmid, title=title, year=year, study_type=study,
        patient=Patient(age=_one(ages), age_group=_one(groups), sex=_one(sexes),
                        history=tuple(dict.fromkeys(h for h in history if h.strip()))),
        drugs=tuple(drugs.values()), reactions=tuple(reactions.values()))


# --- settings ---------------------------------------------------------------------------------
_COUNTRY = re.compile(r"^[A-Z]{2}$")


class E2BSettings(BaseModel):
    """Who sends the reports, and when (the options of ``clinex pv e2b``).

    Attributes
    ----------
    sender_org : str
        C.3.2 (at most 100 characters); also the company part of C.1.1.
    sender_country : str
        C.3.4.5 and the country part of C.1.1: ISO 3166-1 alpha-2 (or ``EU``).
    sender_id : str or None
        N.1.3 / N.2.r.2 (at most 60 characters): the sender identifier agreed with the
        receiver (for the FDA, the one it approved); default ``sender_org`` without
        spaces or punctuation.
    received : date or None
        C.1.4 / C.1.5: the day the article came to the sender's attention; default the
        day of ``created``. Not after ``created``.
    created : datetime or None
        N.1.5, N.2.r.4, C.1.2: default now, local time with its UTC offset.
    per_file : int, default ICSRS_PER_FILE
        ICSRs per batch file.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    sender_org: str = DEFAULT_SENDER_ORG
    sender_country: str = "US"
    sender_id: str | None = None
    received: date | None = None
    created: datetime | None = None
    per_file: int = Field(default=ICSRS_PER_FILE, ge=1)

    def checked(self) -> E2BSettings:
        """A copy with defaults resolved, or :class:`InputError` naming the option."""
        org = " ".join(self.sender_org.split())
        if not org or len(org) > 100:
            raise InputError(f"--sender-org must have 1 to 100 characters; got {len(org)}", field="--sender-org")
        country = self.sender_country.strip().upper()
        if not _COUNTRY.match(country):
            raise InputError(f"--sender-country must be an ISO 3166-1 alpha-2 code such as US, DE or EU; "
                             f"got {self.sender_country!r}", field="--sender-country")
        sender_id = self.sender_id if self.sender_id is not None else _slug(org)
        if not sender_id.strip() or len(sender_id) > 60:
            raise InputError(f"--sender-id must have 1 to 60 characters; got {len(sender_id)}", field="--sender-id")
        created = self.created or datetime.now().astimezone()
        if created.tzinfo is None:
            created = created.astimezone()
        received = self.received or created.date()
        if received > created.date():
            raise InputError(f"--received {received:%Y%m%d} is after today ({created:%Y%m%d}); "
                             "E2B dates may not lie in the future", field="--received")
        return self.model_copy(update={"sender_org": org, "sender_country": country, "sender_id": sender_id,
                                       "created": created, "received": received})


def _slug(text: str) -> str:
    """Letters and digits only, upper case: the company part of C.1.1 (no dashes, ICH)."""
    return re.sub(r"[^A-Za-z0-9]", "", text).upper()[:40] or "SENDER"


# --- XML ----------------------------------------------------------------------------------------
def _q(tag: str) -> str:
    """Tags are written unprefixed; the root declares the HL7 namespace as the default."""
    return tag


def _el(parent: ET.Element, tag: str, attrib: dict[str, str] | None = None, text: str | None = None,
        note: str | None = None) -> ET.Element:
    """A child ``tag`` (HL7 namespace; ``xsi:type`` given as ``"type"``), with a comment after it."""
    attrs = {("xsi:type" if k == "type" else k): v for k, v in (attrib or {}).items()}
    el = ET.SubElement(parent, _q(tag), attrs)
    if text is not None:
        el.text = text
    if note:
        parent.append(ET.Comment(f" {note} "))
    return el


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y%m%d%H%M%S%z")


def _uid(*parts: str) -> str:
    return str(uuid.uuid5(_UUID_NAMESPACE, "/".join(parts)))


def _observation(parent: ET.Element, wrapper: str, code: str, display: str, value: dict[str, str],
                 text: str | None = None, note: str | None = None, type_code: str = "SBJ") -> ET.Element:
    obs = _el(_el(parent, wrapper, {"typeCode": type_code}), "observation", {"classCode": "OBS", "moodCode": "EVN"})
    _el(obs, "code", {"code": code, "codeSystem": OID_OBSERVATION, "displayName": display})
    _el(obs, "value", value, text, note)
    return obs


def _reporter(ie: ET.Element) -> None:
    """C.2.r: the article's author, unknown to clinex (nullFlavors the specification allows)."""
    rel = _el(ie, "outboundRelationship", {"typeCode": "SPRT"})
    _el(rel, "priorityNumber", {"value": "1"}, note="C.2.r.5: Primary Source for Regulatory Purposes")
    inv = _el(rel, "relatedInvestigation", {"classCode": "INVSTG", "moodCode": "EVN"})
    _el(inv, "code", {"code": "2", "codeSystem": OID_RELATED_INVESTIGATION, "displayName": "sourceReport"})
    ent = _el(_el(_el(_el(inv, "subjectOf2", {"typeCode": "SUBJ"}), "controlActEvent",
                      {"classCode": "CACT", "moodCode": "EVN"}), "author", {"typeCode": "AUT"}),
              "assignedEntity", {"classCode": "ASSIGNED"})
    _el(ent, "telecom", {"value": "mailto", "nullFlavor": "NASK"}, note="FDA.C.2.r.2.8: Reporter's Email")
    person = _el(ent, "assignedPerson", {"classCode": "PSN", "determinerCode": "INSTANCE"})
    name = _el(person, "name", note="C.2.r.1: the reporter is the article's author (see C.4.r.1)")
    _el(name, "given", {"nullFlavor": "NASK"}, note="C.2.r.1.2: Reporter's Given Name")
    _el(name, "family", {"nullFlavor": "NASK"}, note="C.2.r.1.4: Reporter's Family Name")
    _el(_el(person, "asQualifiedEntity", {"classCode": "QUAL"}), "code", {"nullFlavor": "UNK"},
        note="C.2.r.4: Qualification")
    _el(_el(_el(person, "asLocatedEntity", {"classCode": "LOCE"}), "location",
            {"classCode": "COUNTRY", "determinerCode": "INSTANCE"}), "code", {"nullFlavor": "UNK"},
        note="C.2.r.3: Reporter's Country Code")


def _sender(ie: ET.Element, s: E2BSettings) -> None:
    """C.3: the sender (a pharmaceutical company) with its organisation and country."""
    ent = _el(_el(_el(_el(ie, "subjectOf1", {"typeCode": "SUBJ"}), "controlActEvent",
                      {"classCode": "CACT", "moodCode": "EVN"}), "author", {"typeCode": "AUT"}),
              "assignedEntity", {"classCode": "ASSIGNED"})
    _el(ent, "code", {"code": "1", "codeSystem": OID_SENDER_TYPE}, note="C.3.1: Sender Type (1: pharmaceutical company)")
    person = _el(ent, "assignedPerson", {"classCode": "PSN", "determinerCode": "INSTANCE"},
                 note="C.3.3, C.3.4.1-4, C.3.4.6-8 (the person responsible, address, telephone, e-mail): "
                      "to be completed by the sender")
    _el(_el(_el(person, "asLocatedEntity", {"classCode": "LOCE"}), "location",
            {"classCode": "COUNTRY", "determinerCode": "INSTANCE"}), "code",
        {"code": str(s.sender_country), "codeSystem": OID_COUNTRY}, note="C.3.4.5: Sender's Country Code")
    org = _el(_el(_el(ent, "representedOrganization", {"classCode": "ORG", "determinerCode": "INSTANCE"}),
                  "assignedEntity", {"classCode": "ASSIGNED"}), "representedOrganization",
              {"classCode": "ORG", "determinerCode": "INSTANCE"})
    _el(org, "name", text=_fit(s.sender_org, "C.3.2"), note="C.3.2: Sender's Organisation")


def _patient(role: ET.Element, case: Case) -> None:
    p = case.patient
    player = _el(role, "player1", {"classCode": "PSN", "determinerCode": "INSTANCE"})
    _el(player, "name", {"nullFlavor": "UNK"}, note="D.1: Patient (name or initials): not in the article")
    if p.sex:
        _el(player, "administrativeGenderCode", {"code": p.sex, "displayName": "Male" if p.sex == "1" else "Female",
                                                 "codeSystem": OID_SEX}, note="D.5: Sex")
    else:
        _el(player, "administrativeGenderCode", {"nullFlavor": "UNK"}, note="D.5: Sex (not stated)")
    if case.study_type:
        study = _el(_el(role, "subjectOf1", {"typeCode": "SBJ"}), "researchStudy",
                    {"classCode": "CLNTRL", "moodCode": "EVN"})
        _el(study, "code", {"code": case.study_type, "displayName": _STUDY_TYPES[case.study_type],
                            "codeSystem": OID_STUDY_TYPE},
            note="C.5.4: Study Type Where Reaction(s) / Event(s) Were Observed (from the publication type)")
    if p.age:
        _observation(role, "subjectOf2", "3", "age", {"type": "PQ", "value": p.age[0], "unit": p.age[1]},
                     note="D.2.2a / D.2.2b: Age at Time of Onset of Reaction / Event (number, unit)")
    if p.age_group:
        _observation(role, "subjectOf2", "4", "ageGroup",
                     {"type": "CE", "code": p.age_group, "displayName": _AGE_GROUPS[p.age_group],
                      "codeSystem": OID_AGE_GROUP}, note="D.2.3: Patient Age Group (as per reporter)")
    org = _el(_el(role, "subjectOf2", {"typeCode": "SBJ"}), "organizer", {"classCode": "CATEGORY", "moodCode": "EVN"})
    _el(org, "code", {"code": "1", "codeSystem": OID_ORGANIZER,
                      "displayName": "relevantMedicalHistoryAndConcurrentConditions"})
    obs = _el(_el(org, "component", {"typeCode": "COMP"}), "observation", {"classCode": "OBS", "moodCode": "EVN"})
    _el(obs, "code", {"code": "18", "codeSystem": OID_OBSERVATION, "displayName": "historyAndConcurrentConditionText"})
    if p.history:
        _el(obs, "value", {"type": "ED"}, _fit("; ".join(p.history), "D.7.2"),
            note="D.7.2: Text for Relevant Medical History and Concurrent Conditions")
    else:
        _el(obs, "value", {"type": "ED", "nullFlavor": "UNK"}, note="D.7.2: not stated")


def _reaction(role: ET.Element, case_id: str, i: int, r: Reaction) -> str:
    obs = _el(_el(role, "subjectOf2", {"typeCode": "SBJ"}), "observation", {"classCode": "OBS", "moodCode": "EVN"})
    rid = _uid(case_id, "reaction", str(i))
    _el(obs, "id", {"root": rid})
    _el(obs, "code", {"code": "29", "codeSystem": OID_OBSERVATION, "displayName": "reaction"})
    value = _el(obs, "value", {"type": "CE", "codeSystem": OID_MEDDRA},
                note="E.i.2.1a / E.i.2.1b: MedDRA version and code: TO BE CODED by the sender (MedDRA needs "
                     "a licence; no nullFlavor is allowed)")
    _el(value, "originalText", {"language": "eng"}, _fit(r.text, "E.i.1.1a"),
        note="E.i.1.1a / E.i.1.1b: Reaction / Event as Reported by the Primary Source, and its language")
    for (code, display), flag in zip(_SERIOUSNESS, (r.fatal, r.life_threatening, False, False, False, False),
                                     strict=True):
        _observation(obs, "outboundRelationship2", code, display,
                     {"type": "BL", "value": "true"} if flag else {"type": "BL", "nullFlavor": "NI"},
                     type_code="PERT")
    obs.append(ET.Comment(" E.i.3.2a-f: seriousness criteria: NI (no information) unless the Effect states it; "
                          "to be assessed by the sender "))
    _observation(obs, "outboundRelationship2", "27", "outcome",
                 {"type": "CE", "code": "5", "displayName": "fatal", "codeSystem": OID_OUTCOME} if r.fatal else
                 {"type": "CE", "code": "0", "displayName": "unknown", "codeSystem": OID_OUTCOME},
                 note="E.i.7: Outcome of Reaction / Event at the Time of Last Observation", type_code="PERT")
    return rid


def _drug(organizer: ET.Element, case_id: str, k: int, d: Drug) -> str:
    sa = _el(_el(organizer, "component", {"typeCode": "COMP"}), "substanceAdministration",
             {"classCode": "SBADM", "moodCode": "EVN"})
    did = _uid(case_id, "drug", str(k))
    _el(sa, "id", {"root": did})
    product = _el(_el(_el(sa, "consumable", {"typeCode": "CSM"}), "instanceOfKind", {"classCode": "INST"}),
                  "kindOfProduct", {"classCode": "MMAT", "determinerCode": "KIND"})
    _el(product, "name", text=_fit(d.text, "G.k.2.2"),
        note="G.k.2.2: Medicinal Product Name as Reported by the Primary Source")
    for name in d.substances:
        substance = _el(_el(product, "ingredient", {"classCode": "ACTI"}), "ingredientSubstance",
                        {"classCode": "MMAT", "determinerCode": "KIND"})
        _el(substance, "name", text=_fit(name, "G.k.2.3.r.1"),
            note="G.k.2.3.r.1: Substance / Specified Substance Name (the drug gazetteer's name)")
    if d.dosage or d.route:
        dose = _el(_el(sa, "outboundRelationship2", {"typeCode": "COMP"}), "substanceAdministration",
                   {"classCode": "SBADM", "moodCode": "EVN"})
        if d.dosage:
            _el(dose, "text", text=_fit(d.dosage, "G.k.4.r.8"), note="G.k.4.r.8: Dosage Text")
        if d.route:
            route = _el(dose, "routeCode", {"codeSystem": OID_ROUTE})
            _el(route, "originalText", text=_fit(d.route, "G.k.4.r.10.1"),
                note="G.k.4.r.10.1: Route of Administration (free text)")
    for indication in d.indications:
        obs = _el(_el(sa, "inboundRelationship", {"typeCode": "RSON"}), "observation",
                  {"classCode": "OBS", "moodCode": "EVN"})
        _el(obs, "code", {"code": "19", "codeSystem": OID_OBSERVATION, "displayName": "indication"})
        value = _el(obs, "value", {"type": "CE", "codeSystem": OID_MEDDRA},
                    note="G.k.7.r.2a / G.k.7.r.2b: MedDRA version and code of the indication (optional)")
        _el(value, "originalText", text=_fit(indication, "G.k.7.r.1"),
            note="G.k.7.r.1: Indication as Reported by the Primary Source")
        _el(_el(_el(obs, "performer", {"typeCode": "PRF"}), "assignedEntity", {"classCode": "ASSIGNED"}), "code",
            {"code": "3", "codeSystem": OID_ASSIGNED_ROLE, "displayName": "sourceReporter"})
    return did


def _icsr(case: Case, case_id: str, s: E2BSettings) -> ET.Element:
    """One ``PORR_IN049016UV`` message."""
    assert s.created is not None and s.received is not None
    created = _ts(s.created)
    msg = ET.Element(_q("PORR_IN049016UV"))
    _el(msg, "id", {"extension": case_id, "root": OID_MESSAGE_ID}, note="N.2.r.1: Message Identifier (= C.1.1)")
    _el(msg, "creationTime", {"value": created}, note="N.2.r.4: Date of Message Creation (= C.1.2)")
    _el(msg, "interactionId", {"extension": "PORR_IN049016UV", "root": "2.16.840.1.113883.1.6"})
    _el(msg, "processingCode", {"code": "P"})
    _el(msg, "processingModeCode", {"code": "I"})
    _el(msg, "acceptAckCode", {"code": "AL"})
    _el(_el(_el(msg, "receiver", {"typeCode": "RCV"}), "device", {"classCode": "DEV", "determinerCode": "INSTANCE"}),
        "id", {"extension": MESSAGE_RECEIVER, "root": OID_MESSAGE_RECEIVER}, note="N.2.r.3: Message Receiver Identifier")
    _el(_el(_el(msg, "sender", {"typeCode": "SND"}), "device", {"classCode": "DEV", "determinerCode": "INSTANCE"}),
        "id", {"extension": str(s.sender_id), "root": OID_MESSAGE_SENDER}, note="N.2.r.2: Message Sender Identifier")
    cap = _el(msg, "controlActProcess", {"classCode": "CACT", "moodCode": "EVN"})
    _el(cap, "code", {"code": "PORR_TE049016UV", "codeSystem": "2.16.840.1.113883.1.18"})
    _el(cap, "effectiveTime", {"value": created}, note="C.1.2: Date of Creation")
    ie = _el(_el(cap, "subject", {"typeCode": "SUBJ"}), "investigationEvent", {"classCode": "INVSTG", "moodCode": "EVN"})
    _el(ie, "id", {"extension": case_id, "root": OID_MESSAGE_ID},
        note="C.1.1: Sender's (case) Safety Report Unique Identifier")
    _el(ie, "id", {"extension": case_id, "root": OID_WORLDWIDE_ID}, note="C.1.8.1: Worldwide Unique Case Identification")
    _el(ie, "code", {"code": "PAT_ADV_EVNT", "codeSystem": "2.16.840.1.113883.5.4"})
    _el(ie, "text", {"mediaType": "text/plain"}, _fit(case.text, "H.1"),
        note="H.1: Case Narrative: the article's text (title and abstract)")
    _el(ie, "statusCode", {"code": "active"})
    _el(_el(ie, "effectiveTime"), "low", {"value": f"{s.received:%Y%m%d}"},
        note="C.1.4: Date Report Was First Received from Source")
    _el(ie, "availabilityTime", {"value": f"{s.received:%Y%m%d}"},
        note="C.1.5: Date of Most Recent Information for This Report")
    doc = _el(_el(ie, "reference", {"typeCode": "REFR"}), "document", {"classCode": "DOC", "moodCode": "EVN"})
    _el(doc, "code", {"code": "2", "codeSystem": OID_DOCUMENT, "displayName": "literatureReference"})
    _el(doc, "bibliographicDesignationText", text=case.citation(), note="C.4.r.1: Literature Reference(s)")

    aea = _el(_el(ie, "component", {"typeCode": "COMP"}), "adverseEventAssessment",
              {"classCode": "INVSTG", "moodCode": "EVN"})
    role = _el(_el(aea, "subject1", {"typeCode": "SBJ"}), "primaryRole", {"classCode": "INVSBJ"})
    _patient(role, case)
    for i, reaction in enumerate(case.reactions, 1):
        _reaction(role, case_id, i, reaction)
    organizer = _el(_el(role, "subjectOf2", {"typeCode": "SBJ"}), "organizer",
                    {"classCode": "CATEGORY", "moodCode": "EVN"})
    _el(organizer, "code", {"code": "4", "codeSystem": OID_ORGANIZER, "displayName": "drugInformation"},
        note="G.k: Drug(s) Information")
    drug_ids = [_drug(organizer, case_id, k, d) for k, d in enumerate(case.drugs, 1)]
    for did in drug_ids:
        ca = _el(_el(aea, "component", {"typeCode": "COMP"}), "causalityAssessment",
                 {"classCode": "OBS", "moodCode": "EVN"})
        _el(ca, "code", {"code": "20", "codeSystem": OID_OBSERVATION, "displayName": "interventionCharacterization"})
        _el(ca, "value", {"type": "CE", "code": "1", "displayName": "Suspect", "codeSystem": OID_DRUG_ROLE},
            note="G.k.1: Characterisation of Drug Role")
        _el(_el(_el(ca, "subject2", {"typeCode": "SUBJ"}), "productUseReference",
                {"classCode": "SBADM", "moodCode": "EVN"}), "id", {"root": did})

    docs = _el(_el(ie, "component", {"typeCode": "COMP"}), "observationEvent", {"classCode": "OBS", "moodCode": "EVN"})
    _el(docs, "code", {"code": "1", "codeSystem": OID_OBSERVATION, "displayName": "additionalDocumentsAvailable"})
    _el(docs, "value", {"type": "BL", "value": "false"}, note="C.1.6.1: Are Additional Documents Available?")
    ie.append(ET.Comment(" C.1.7 (expedited report?) and FDA.C.1.7.1, FDA.C.1.12: to be completed by the sender "))
    first = _el(_el(ie, "outboundRelationship", {"typeCode": "SPRT"}), "relatedInvestigation",
                {"classCode": "INVSTG", "moodCode": "EVN"})
    _el(first, "code", {"code": "1", "codeSystem": OID_RELATED_INVESTIGATION, "displayName": "initialReport"})
    _el(_el(_el(_el(_el(first, "subjectOf2", {"typeCode": "SUBJ"}), "controlActEvent",
                    {"classCode": "CACT", "moodCode": "EVN"}), "author", {"typeCode": "AUT"}), "assignedEntity",
            {"classCode": "ASSIGNED"}), "code", {"code": "2", "displayName": "other", "codeSystem": OID_FIRST_SENDER},
        note="C.1.8.2: First Sender of This Case")
    _reporter(ie)
    _sender(ie, s)
    kind = _el(_el(ie, "subjectOf2", {"typeCode": "SUBJ"}), "investigationCharacteristic",
               {"classCode": "OBS", "moodCode": "EVN"})
    _el(kind, "code", {"code": "1", "codeSystem": OID_CHARACTERISTIC, "displayName": "ICH ReportType"})
    report_type = "2" if case.study_type else "1"
    _el(kind, "value", {"type": "CE", "code": report_type, "codeSystem": OID_REPORT_TYPE,
                        "displayName": "Report from study" if case.study_type else "Spontaneous report"},
        note="C.1.3: Type of Report")
    other = _el(_el(ie, "subjectOf2", {"typeCode": "SUBJ"}), "investigationCharacteristic",
                {"classCode": "OBS", "moodCode": "EVN"})
    _el(other, "code", {"code": "2", "codeSystem": OID_CHARACTERISTIC, "displayName": "otherCaseIds"})
    _el(other, "value", {"type": "BL", "nullFlavor": "NI"},
        note="C.1.9.1: Other Case Identifiers in Previous Transmissions")
    return msg


def build_batch(cases: Sequence[tuple[Case, str]], settings: E2BSettings, batch_number: str) -> bytes:
    """One E2B(R3) batch file: ``MCCI_IN200100UV01`` around one message per case.

    Parameters
    ----------
    cases : sequence of (Case, str)
        Each case with its C.1.1 identifier (unique per ICSR).
    settings : E2BSettings
        Resolved with :meth:`E2BSettings.checked`.
    batch_number : str
        N.1.2.

    Returns
    -------
    bytes
        The XML document (UTF-8, with its declaration), indented.
    """
    s = settings.checked()
    assert s.created is not None
    root = ET.Element(_q("MCCI_IN200100UV01"), {"xmlns": _HL7, "xmlns:xsi": _XSI, "ITSVersion": "XML_1.0",
                                                  "xsi:schemaLocation": _SCHEMA_LOCATION})
    root.append(ET.Comment(" Draft ICH E2B(R3) ICSRs written by clinex pv e2b from extracted literature events: "
                           "code every reaction in MedDRA (E.i.2.1a/b) and complete the elements marked "
                           "'to be completed' before submission "))
    _el(root, "id", {"extension": _fit(batch_number, "N.1.2"), "root": OID_BATCH_NUMBER}, note="N.1.2: Batch Number")
    _el(root, "creationTime", {"value": _ts(s.created)}, note="N.1.5: Date of Batch Transmission")
    _el(root, "responseModeCode", {"code": "D"})
    _el(root, "interactionId", {"extension": "MCCI_IN200100UV01", "root": "2.16.840.1.113883.1.6"})
    _el(root, "name", {"code": "1", "displayName": "ichicsr", "codeSystem": OID_MESSAGE_TYPE},
        note="N.1.1: Types of Message in batch")
    for case, case_id in cases:
        root.append(_icsr(case, case_id, s))
    _el(_el(_el(root, "receiver", {"typeCode": "RCV"}), "device", {"classCode": "DEV", "determinerCode": "INSTANCE"}),
        "id", {"extension": BATCH_RECEIVER, "root": OID_BATCH_RECEIVER}, note="N.1.4: Batch Receiver Identifier")
    _el(_el(_el(root, "sender", {"typeCode": "SND"}), "device", {"classCode": "DEV", "determinerCode": "INSTANCE"}),
        "id", {"extension": str(s.sender_id), "root": OID_BATCH_SENDER}, note="N.1.3: Batch Sender Identifier")
    ET.indent(root, space="\t")
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


# --- reading a batch run ------------------------------------------------------------------------
_NEEDED_COLUMNS = ("id", "text", "n_adverse", "phee_json")


def iter_run_cases(run: str | Path, *, on_warning: Callable[[str], None] | None = None,
                   counts: dict[str, int] | None = None) -> Iterator[Case]:
    """The literature cases of a finished ``clinex batch pv`` run, in the order of its results.

    Parameters
    ----------
    run : path
        The run's output folder.
    on_warning : callable, optional
        Called with a message for a row whose ``phee_json`` cannot be read (the row is
        skipped); default: printed to stderr.
    counts : dict, optional
        Filled with ``records`` (rows with an asserted adverse event), ``cases``,
        ``no_case`` (rows whose asserted adverse events name no drug or no reaction) and
        ``animals`` (MEDLINE citations indexed with the MeSH heading *Animals* but not
        *Humans*: animal studies, not individual cases; no ICSR).

    Yields
    ------
    Case

    Raises
    ------
    InputError
        ``run`` is missing, not a ``clinex batch pv`` folder, or an incomplete run (the
        message names the folder and says how to finish it:
        :func:`clinex.pv.run_folder.check_pv_run`).
    FormatError
        ``results.parquet`` cannot be read or lacks the pv columns.
    """
    import duckdb

    from clinex.pv.formats.phee_json import parse_phee_dict

    run = Path(run)
    manifest, columns = check_pv_run(run, "e2b", columns=_NEEDED_COLUMNS)
    warn = on_warning or (lambda m: print(m, file=sys.stderr))
    if isinstance(manifest.get("n_errors"), int) and manifest["n_errors"] > 0:
        warn(f"warning: {run}: the batch run skipped {manifest['n_errors']} input item(s) (see "
             f"{run / 'errors.jsonl'}); they have no ICSR")
    counts = counts if counts is not None else {}
    for key in ("records", "cases", "no_case", "animals"):
        counts.setdefault(key, 0)
    results = run / "results.parquet"
    con = duckdb.connect()
    try:
        source = "source" if "source" in columns else "''"
        meta = "meta_json" if "meta_json" in columns else "NULL"
        cur = con.execute(f"SELECT id, {source}, phee_json, {meta} FROM read_parquet({sql_str(results)}) "
                          "WHERE n_adverse > 0")
        while rows := cur.fetchmany(1000):
            for rid, src, phee, meta_json in rows:
                counts["records"] += 1
                try:
                    item = parse_phee_dict(json.loads(phee))
                    meta_obj = json.loads(meta_json) if meta_json else None
                except (ValueError, ClinexError) as exc:
                    warn(f"warning: {results}: record {rid!r}: its phee_json cannot be read ({exc}); skipped")
                    counts["no_case"] += 1
                    continue
                meta_obj = meta_obj if isinstance(meta_obj, dict) else None
                if _animals_only(meta_obj):
                    counts["animals"] += 1
                    continue
                case = case_from_record(item, source=src or "", meta=meta_obj)
                if case is None:
                    counts["no_case"] += 1
                    continue
                counts["cases"] += 1
                yield case
    finally:
        con.close()


def _animals_only(meta: dict[str, Any] | None) -> bool:
    """A MEDLINE citation indexed *Animals* without *Humans* (MeSH's check tags): no human case."""
    headings = {str(h).casefold() for h in (meta or {}).get("mesh_headings") or ()}
    return "animals" in headings and "humans" not in headings


# --- writing ------------------------------------------------------------------------------------
@dataclass
class E2BSummary:
    """What :func:`write_e2b` did."""

    out: Path
    records: int = 0
    icsrs: int = 0
    no_case: int = 0
    animals: int = 0
    files: list[Path] = field(default_factory=list)


_CASE_COLUMNS = ("file", "c_1_1", "record_id", "source", "pmid", "report_type", "age", "sex", "drugs",
                 "substances", "reactions", "seriousness_stated")


def _prepare_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise InputError("exists and is a file; give a folder for the E2B files", path=out)
    if out.exists() and not force:
        raise InputError("already exists; refusing to overwrite it (use --force to replace the E2B files in it)",
                         path=out)
    if out.exists():  # --force: only what an earlier export wrote goes
        for old in [*out.glob("icsr-*.xml"), out / "cases.csv"]:
            try:
                if old.is_file():
                    old.unlink()
            except OSError as exc:
                raise InputError(f"cannot remove an earlier export's file ({exc.strerror})", path=old) from None


def write_e2b(run: str | Path, out: str | Path, *, settings: E2BSettings | None = None, force: bool = False,
              on_warning: Callable[[str], None] | None = None) -> E2BSummary:
    """Write the ICSRs of a ``clinex batch pv`` run as E2B(R3) batch files.

    Parameters
    ----------
    run : path
        The finished run's folder.
    out : path
        The folder to write: ``icsr-00001.xml`` ... (``settings.per_file`` ICSRs each) and
        ``cases.csv`` (one row per ICSR: its file, C.1.1, record, PMID, patient, drugs,
        reactions). It must not exist unless ``force``.
    settings : E2BSettings, optional
        Sender and dates; default :class:`E2BSettings` ``()`` (a placeholder sender).
    force : bool, default False
        Replace the ``icsr-*.xml`` and ``cases.csv`` of an existing ``out`` (other files
        are kept).
    on_warning : callable, optional
        Called with each warning (default: stderr).

    Returns
    -------
    E2BSummary

    Raises
    ------
    InputError
        A bad ``run`` (see :func:`iter_run_cases`), an existing ``out`` without ``force``,
        a bad setting (names the option), or a file that cannot be written.

    Examples
    --------
    >>> write_e2b("runs/medline", "runs/medline-e2b",
    ...           settings=E2BSettings(sender_org="Acme Pharma", sender_country="DE"))  # doctest: +SKIP
    """
    from clinex.io.atomic import write_atomic

    run, out = Path(run), Path(out)
    s = (settings or E2BSettings()).checked()
    assert s.created is not None
    check_pv_run(run, "e2b", columns=_NEEDED_COLUMNS)  # before anything is written
    _prepare_out(out, force)
    summary = E2BSummary(out=out)
    counts: dict[str, int] = {}
    used: set[str] = set()
    table = io.StringIO()
    writer = csv.writer(table, lineterminator="\n")
    writer.writerow(_CASE_COLUMNS)
    pending: list[tuple[Case, str]] = []
    stamp = f"{s.created:%Y%m%d%H%M%S}"
    company = _slug(s.sender_org)

    def flush() -> None:
        if not pending:
            return
        number = len(summary.files) + 1
        path = out / f"icsr-{number:05d}.xml"
        write_atomic(path, build_batch(pending, s, f"{_slug(str(s.sender_id))[:40]}-{stamp}-{number:05d}"),
                     force=True)
        summary.files.append(path)
        pending.clear()

    for case in iter_run_cases(run, on_warning=on_warning, counts=counts):
        number = f"PMID{case.pmid}" if case.pmid else re.sub(r"[^A-Za-z0-9_.]", "_", case.record_id)[:50] or "RECORD"
        case_id = f"{s.sender_country}-{company}-{number}"
        k = 1
        while case_id in used:
            k += 1
            case_id = f"{s.sender_country}-{company}-{number}.{k}"
        used.add(case_id)
        p = case.patient
        writer.writerow((
            f"icsr-{len(summary.files) + 1:05d}.xml", case_id, case.record_id, case.source, case.pmid or "",
            "2" if case.study_type else "1", f"{p.age[0]} {p.age[1]}" if p.age else "",
            {"1": "male", "2": "female"}.get(p.sex or "", ""), " | ".join(d.text for d in case.drugs),
            " | ".join("; ".join(d.substances) for d in case.drugs), " | ".join(r.text for r in case.reactions),
            " | ".join(x for r in case.reactions for x in (("fatal",) if r.fatal else ()) + (
                ("life-threatening",) if r.life_threatening else ()))))
        pending.append((case, case_id))
        summary.icsrs += 1
        if len(pending) >= s.per_file:
            flush()
    flush()
    summary.records, summary.no_case, summary.animals = (counts.get("records", 0), counts.get("no_case", 0),
                                                          counts.get("animals", 0))
    write_atomic(out / "cases.csv", table.getvalue(), force=True)
    return summary
