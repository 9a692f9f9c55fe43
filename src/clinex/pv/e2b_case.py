"""E2B(R3) ICSRs, part 1: what one literature case says (issue 24: from :mod:`clinex.pv.e2b`).

The element list clinex fills (:func:`element_rules`, ``resources/pv/e2b/elements.json``),
the case models (:class:`Case`, :class:`Drug`, :class:`Reaction`, :class:`Patient`), the
readers of a Subject's words (:func:`age_of`, :func:`age_group_of`, :func:`sex_of`) and
:func:`case_from_record`, which gathers one record's asserted adverse events into a
case. :mod:`clinex.pv.e2b_xml` writes a case as XML; :mod:`clinex.pv.e2b` reads a run
and writes the files (and re-exports these names).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from clinex.errors import FormatError
from clinex.pv.normalise import names_no_product
from clinex.pv.pairs import names_no_reaction
from clinex.pv.run_folder import record_pmid
from clinex.pv.types import Event, SentenceEvents

__all__ = ["NOT_XML", "Case", "Drug", "ElementRule", "Patient", "Reaction", "age_group_of", "age_of",
           "case_from_record", "element_rules", "fit", "sex_of"]

# XML 1.0 forbids most control characters; a record's text may hold them
NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


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


def fit(text: str, element: str) -> str:
    """``text`` cleaned for XML and cut to the element's maximum length (an ellipsis marks a cut)."""
    text = NOT_XML.sub(" ", text)
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
        return NOT_XML.sub(" ", f"{head} {tail}" if head else tail)


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

    drugs: dict[str, Drug] = {}
    reactions: dict[str, Reaction] = {}
    facts = _SubjectFacts()
    for ev in item.events:
        if ev.event_type != "Adverse_event" or not is_asserted(ev):
            continue
        effects = [a.span.text for a in ev.main("Effect") if not names_no_reaction(a.span.text)]
        named = _suspects(ev)
        if not effects or not named:
            continue
        died = bool(_FATAL.search(ev.trigger.text))  # "died of hepatic failure": the trigger says it
        for text in effects:
            reactions.setdefault(_key(_ARTICLE.sub("", text)), Reaction(
                text=text, fatal=died or bool(_FATAL.search(text)),
                life_threatening=bool(_LIFE_THREATENING.search(text))))
        _add_drugs(drugs, ev, named, substances)
        facts.add(ev)
    if not drugs or not reactions:
        return None
    pmid, title, year, study = _citation_facts(item, meta or {})
    return Case(
        record_id=item.id, source=source, text=item.text, pmid=pmid, title=title, year=year, study_type=study,
        patient=facts.patient(), drugs=tuple(drugs.values()), reactions=tuple(reactions.values()))


def _suspects(ev: Event) -> list[str]:
    """The distinct drug texts an event names (its Treatments' Drugs, then its combination
    drugs), without blanks and mentions that name no product
    (:func:`~clinex.pv.normalise.names_no_product`; ICH E2B(R3) G.k: the medicinal
    product the reporter suspects)."""
    named = [a.span.text for a in ev.sub_arguments.get("Treatment", ()) if a.role == "Drug"]
    named += [d.span.text for c in ev.combinations for d in c.drugs]
    return list(dict.fromkeys(t for t in named if t.strip() and not names_no_product(t)))


def _add_drugs(drugs: dict[str, Drug], ev: Event, named: list[str],
               substances: Callable[[str], Sequence[str]]) -> None:
    """Merge the event's suspect drugs into ``drugs`` (keyed by their substances, else their
    text); the Treatment's Dosage and Route go to a drug only when the event names one."""
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


@dataclass
class _SubjectFacts:
    """What the case's events say of the patient: ages, age groups, sexes, history."""

    ages: list[tuple[str, str] | None] = field(default_factory=list)
    groups: list[str | None] = field(default_factory=list)
    sexes: list[str | None] = field(default_factory=list)
    history: list[str] = field(default_factory=list)

    def add(self, ev: Event) -> None:
        """Add what the event's Subject (its Age, Gender and Disorder, else its words) says."""
        subject = " ".join(a.span.text for a in ev.main("Subject"))
        age_texts = _subs(ev, "Subject", "Age")
        self.ages.extend(age_of(t) for t in age_texts or [subject])
        self.groups.extend(age_group_of(t) for t in [*age_texts, subject])
        genders = _subs(ev, "Subject", "Gender")
        self.sexes.extend(sex_of(t, pronouns=True) for t in genders or [subject])
        self.history.extend(_subs(ev, "Subject", "Disorder"))

    def patient(self) -> Patient:
        """The patient: each fact when the events agree on it, else unknown."""
        return Patient(age=_one(self.ages), age_group=_one(self.groups), sex=_one(self.sexes),
                       history=tuple(dict.fromkeys(h for h in self.history if h.strip())))


def _citation_facts(item: SentenceEvents, meta: dict[str, Any]
                    ) -> tuple[str | None, str | None, int | None, str | None]:
    """PMID, title, year and C.4.r.1 study type of a record, from its MEDLINE ``meta``
    (a record id of 5 to 9 digits is taken as the PMID without one)."""
    pmid = record_pmid(item.id, meta)
    title_end = meta.get("title_end")
    title = item.text[:title_end].strip() if isinstance(title_end, int) and 0 < title_end <= len(item.text) else None
    year = meta.get("year") if isinstance(meta.get("year"), int) else None
    types = [str(t) for t in meta.get("publication_types") or ()]
    study = "1" if any(_TRIAL_TYPES.match(t) for t in types) else "3" if any(
        _STUDY_TYPES_OTHER.match(t) for t in types) else None
    return pmid, title, year, study
