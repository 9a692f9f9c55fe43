"""Criterion files: the pydantic schema and the loader.

A criterion is data, not code: one YAML (or TOML) file names its concepts (phrases
and synonyms), which ConText modifiers void a mention, a time window counted back
from the patient's latest record date, lab-value thresholds, and a boolean rule
over all of these (``any_of``, ``all_of``, ``at_least: 2 of``, ``not``). One
engine (:mod:`clinex.cohort.engine`) interprets every file.

A minimal file::

    name: EGFR-LT60-1YR
    description: eGFR below 60 mL/min/1.73 m2 in the past year.
    labs:
      egfr:
        names: ["egfr", "gfr"]
        unit: "mL/min/1.73m2"
        plausible: [1, 200]
        below: 60
        window_days: 365
    rule: egfr

Errors name the file and the field: ``[CLX005] my.yaml: field 'labs.egfr.below':
Input should be a valid number``.

References
----------
.. [1] Stubbs A, Filannino M, Soysal E, Henry S, Uzuner Ö. Cohort selection for
   clinical trials: n2c2 2018 shared task track 1. JAMIA 2019;26(11):1163-1171
   (the 13 criteria and their definitions).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from clinex.cohort.types import Label
from clinex.errors import InputError, SchemaError
from clinex.io.textfile import parse_yaml

__all__ = [
    "QuantitySpec",
    "ConceptSpec",
    "LabSpec",
    "AnyOf",
    "AllOf",
    "AtLeast",
    "Not",
    "Rule",
    "Criterion",
    "load_criterion",
    "load_criteria",
    "builtin_criteria_files",
    "CONTEXT_CATEGORIES",
]

#: ConText modifier categories a concept may exclude (medspaCy defaults + clinex's).
CONTEXT_CATEGORIES = (
    "NEGATED_EXISTENCE",
    "POSSIBLE_EXISTENCE",
    "FAMILY",
    "HISTORICAL",
    "HYPOTHETICAL",
    "PLANNED",
    "OTHER_PERSON",
)

#: Canonical term of mentions read by a concept's ``quantity``.
AMOUNT_TERM = "<amount>"

_DEFAULT_EXCLUDE = ("NEGATED_EXISTENCE", "FAMILY", "HYPOTHETICAL", "PLANNED", "POSSIBLE_EXISTENCE")

ContextCategory = Literal[
    "NEGATED_EXISTENCE",
    "POSSIBLE_EXISTENCE",
    "FAMILY",
    "HISTORICAL",
    "HYPOTHETICAL",
    "PLANNED",
    "OTHER_PERSON",
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _check_regexes(values: Sequence[str]) -> Sequence[str]:
    for i, v in enumerate(values):
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"item {i}: invalid regular expression {v!r}: {exc}") from None
    return values


class QuantitySpec(_Model):
    """An amount per week read around a unit phrase ("4-5 beers most nights").

    Attributes
    ----------
    units : dict of str to float
        Unit phrase → how many standard units one of it holds (``beers: 1``,
        ``bottle of wine: 5``). These phrases become targets of the concept.
    per_week : dict of str to float
        Regular expression for a period after the unit → occurrences per week
        (``"a day|daily|nightly": 7``, ``"most nights": 5``, ``"on weekends": 2``).
    above : float
        The mention supports the concept when amount/week > ``above``; a stated
        amount at or below it is counter-evidence (with ``resolve: latest`` a
        moderate amount in the latest record cancels older heavy use).
    above_female : float or None
        Threshold used instead when the patient's notes refer to her as a woman
        (more she/her/woman/Mrs than he/his/man/Mr).

    Notes
    -----
    The count before the unit may be a number, a range (the lower end is used),
    or ``a``/``an``/``one``/``a couple of``; one word may stand between count and
    unit ("4-5 vodka drinks"). A unit without a count or a period is ignored.
    """

    units: dict[str, float] = Field(min_length=1)
    per_week: dict[str, float] = Field(min_length=1)
    above: float
    above_female: float | None = None

    @field_validator("per_week")
    @classmethod
    def _regex_keys(cls, v: dict[str, float]) -> dict[str, float]:
        _check_regexes(list(v))
        return v


class ConceptSpec(_Model):
    """A concept: phrases whose mentions (after ConText and filters) support a criterion.

    Attributes
    ----------
    phrases : list of str
        Literal phrases, matched case-insensitively on token boundaries; each phrase
        is its own term.
    terms : dict of str to list of str
        Canonical term → synonyms (the canonical name matches too). Terms are what
        ``distinct`` counts ("aspirin" and "ASA" are one drug).
    exclude_modifiers : list of str
        ConText categories that void a mention. Default: negated, family,
        hypothetical, planned, possible.
    exclude_sections : list of str
        medspaCy section categories whose mentions are void (default
        ``family_history``).
    exclude_context : list of str
        Regular expressions (case-insensitive) searched in the mention's clause
        (the ``;``-separated part of its sentence, see
        :func:`clinex.cohort.mentions._clause`); a hit voids the mention ("ruled
        out", "motivational interviewing").
    require_context : list of str
        If given, the sentence must match one of these regular expressions.
    against_context : list of str
        Regular expressions that turn a mention into counter-evidence ("stopped",
        "allergy"); used with ``resolve: latest``.
    against_phrases : list of str
        Phrases whose mentions are counter-evidence by themselves ("sober",
        "quit drinking"); with ``resolve: latest`` a later one cancels earlier
        positive mentions.
    window_days : int or None
        Only events within this many days before "now" (the latest record date)
        count; an event's date is a date or relative time in its sentence
        ("3 weeks ago", "in 2069"), else its record's date.
    distinct : int
        The concept holds when at least this many distinct terms are mentioned.
    resolve : {"any", "latest"}
        ``any``: any valid mention makes the concept hold. ``latest``: the latest
        record with a mention or a counter-mention decides, and a counter-mention
        wins within that record.
    """

    phrases: list[str] = Field(default_factory=list)
    terms: dict[str, list[str]] = Field(default_factory=dict)
    exclude_modifiers: list[ContextCategory] = Field(default_factory=lambda: list(_DEFAULT_EXCLUDE))
    exclude_sections: list[str] = Field(default_factory=lambda: ["family_history"])
    exclude_context: list[str] = Field(default_factory=list)
    require_context: list[str] = Field(default_factory=list)
    against_context: list[str] = Field(default_factory=list)
    against_phrases: list[str] = Field(default_factory=list)
    window_days: int | None = Field(default=None, ge=1)
    distinct: int = Field(default=1, ge=1)
    resolve: Literal["any", "latest"] = "any"
    quantity: QuantitySpec | None = None

    _v_regex = field_validator("exclude_context", "require_context", "against_context")(
        classmethod(lambda cls, v: _check_regexes(v))
    )

    @field_validator("phrases")
    @classmethod
    def _nonempty_phrases(cls, v: list[str]) -> list[str]:
        for i, p in enumerate(v):
            if not p.strip():
                raise ValueError(f"item {i}: empty phrase")
        return v

    @model_validator(mode="after")
    def _has_phrases(self) -> "ConceptSpec":
        if not self.phrases and not self.terms and self.quantity is None:
            raise ValueError("a concept needs 'phrases', 'terms' or 'quantity'")
        return self

    def term_map(self) -> dict[str, str]:
        """Lower-cased phrase → canonical term (quantity units map to ``"<amount>"``)."""
        out = {p.lower(): p.lower() for p in self.phrases}
        for canon, syns in self.terms.items():
            for s in [canon, *syns]:
                out[s.lower()] = canon.lower()
        if self.quantity is not None:
            for unit in self.quantity.units:
                out[unit.lower()] = AMOUNT_TERM
        return out


class LabSpec(_Model):
    """A lab value test: analyte names, unit conversion, and a threshold.

    Attributes
    ----------
    names : list of str
        Regular expressions (case-insensitive, matched on word boundaries) naming
        the analyte ("hba1c", "a1c", "creatinine", "cr").
    exclude_before : list of str
        Regular expressions; a name preceded (within 25 characters on its line) by a
        hit is not this analyte or not a result ("urine", "goal", "clearance").
    exclude_after : list of str
        Regular expressions; a name directly followed by a hit is skipped
        ("clearance", "/creatinine ratio").
    unit : str
        The unit thresholds are stated in ("%", "mg/dL").
    conversions : dict of str to float
        Lower-cased unit → factor to multiply into ``unit`` (``µmol/l: 0.011312``,
        i.e. ÷ 88.4).
    plausible : (float, float)
        Values outside this range (after conversion) are not results of this analyte.
    between : (float, float) or None
        Holds when ``between[0] <= value <= between[1]`` (inclusive).
    below, above : float or None
        Holds when ``value < below`` / ``value > above``.
    above_reference : bool
        Holds when value > the printed reference range's upper limit, or > ``above``
        when no range is printed.
    window_days : int or None
        Only values in records within this many days before "now".
    """

    names: list[str]
    exclude_before: list[str] = Field(default_factory=list)
    exclude_after: list[str] = Field(default_factory=list)
    unit: str
    conversions: dict[str, float] = Field(default_factory=dict)
    plausible: tuple[float, float]
    between: tuple[float, float] | None = None
    below: float | None = None
    above: float | None = None
    above_reference: bool = False
    window_days: int | None = Field(default=None, ge=1)

    _v_regex = field_validator("names", "exclude_before", "exclude_after")(
        classmethod(lambda cls, v: _check_regexes(v))
    )

    @model_validator(mode="after")
    def _has_threshold(self) -> "LabSpec":
        if self.between is None and self.below is None and self.above is None:
            raise ValueError("a lab needs a threshold: 'between', 'below' or 'above'")
        if self.above_reference and self.above is None:
            raise ValueError("'above_reference' needs 'above' (the default upper limit)")
        if self.between is not None and self.between[0] > self.between[1]:
            raise ValueError("'between' must be (low, high) with low <= high")
        return self


class AnyOf(_Model):
    """Holds when any item holds."""

    any_of: list["Rule"] = Field(min_length=1)


class AllOf(_Model):
    """Holds when every item holds."""

    all_of: list["Rule"] = Field(min_length=1)


class AtLeast(_Model):
    """Holds when at least ``at_least`` of the items in ``of`` hold."""

    at_least: int = Field(ge=1)
    of: list["Rule"] = Field(min_length=1)

    @model_validator(mode="after")
    def _enough(self) -> "AtLeast":
        if self.at_least > len(self.of):
            raise ValueError(f"at_least={self.at_least} but only {len(self.of)} items in 'of'")
        return self


class Not(_Model):
    """Holds when its item does not."""

    not_: "Rule" = Field(alias="not")

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


Rule = str | AnyOf | AllOf | AtLeast | Not
AnyOf.model_rebuild()
AllOf.model_rebuild()
AtLeast.model_rebuild()
Not.model_rebuild()


class Criterion(_Model):
    """One eligibility criterion, as read from its file.

    Attributes
    ----------
    name : str
        The criterion's name (``"ADVANCED-CAD"``); n2c2 names are the XML tags.
    version : int
        Bumped when the rules change (provenance: ``ADVANCED-CAD.v1``).
    description : str
        One-line definition.
    references : list of str
        Guideline / paper sections the rules implement.
    when_true, otherwise : {"met", "not met"}
        Label when the rule holds / does not. ENGLISH is ``when_true: not met``,
        ``otherwise: met`` (met by default).
    concepts : dict of str to ConceptSpec
    labs : dict of str to LabSpec
    rule : str or rule object
        Names of concepts and labs combined with ``any_of``, ``all_of``,
        ``at_least``/``of`` and ``not``.
    source : str or None
        The file it was loaded from (set by the loader).
    """

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$")
    version: int = 1
    description: str = ""
    references: list[str] = Field(default_factory=list)
    when_true: Label = "met"
    otherwise: Label = "not met"
    concepts: dict[str, ConceptSpec] = Field(default_factory=dict)
    labs: dict[str, LabSpec] = Field(default_factory=dict)
    rule: Rule
    source: str | None = None

    @model_validator(mode="after")
    def _names_resolve(self) -> "Criterion":
        known = set(self.concepts) | set(self.labs)
        clash = set(self.concepts) & set(self.labs)
        if clash:
            raise ValueError(f"names used both as concept and lab: {sorted(clash)}")
        if self.when_true == self.otherwise:
            raise ValueError("'when_true' and 'otherwise' must differ")
        for ref in _rule_names(self.rule):
            if ref not in known:
                raise ValueError(
                    f"rule refers to {ref!r}, which is not a concept or lab; known: {sorted(known)}"
                )
        return self

    @property
    def rule_id(self) -> str:
        """Versioned id for provenance (``"HBA1C.v1"``)."""
        return f"{self.name}.v{self.version}"


def _rule_names(rule: Rule) -> Iterable[str]:
    if isinstance(rule, str):
        yield rule
    elif isinstance(rule, AnyOf):
        for r in rule.any_of:
            yield from _rule_names(r)
    elif isinstance(rule, AllOf):
        for r in rule.all_of:
            yield from _rule_names(r)
    elif isinstance(rule, AtLeast):
        for r in rule.of:
            yield from _rule_names(r)
    elif isinstance(rule, Not):
        yield from _rule_names(rule.not_)


def _read_mapping(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such criterion file", path=path) from None
    except UnicodeDecodeError:
        raise InputError("criterion file is not UTF-8 text", path=path) from None
    suffix = path.suffix.lower()
    if suffix == ".toml":
        import tomllib

        try:
            data = tomllib.loads(raw)
        except tomllib.TOMLDecodeError as exc:
            raise SchemaError(f"invalid TOML: {exc}", path=path) from None
    elif suffix in (".yaml", ".yml"):
        data = parse_yaml(raw, path=path, error=SchemaError, what="invalid YAML")
    else:
        raise InputError("criterion files end in .yaml, .yml or .toml", path=path)
    if not isinstance(data, dict):
        raise SchemaError("a criterion file must hold a mapping at the top level", path=path)
    return data


_TYPEISH = {"string_type", "model_type", "dict_type", "model_attributes_type", "union_tag_invalid"}
_BRANCH = ("function-", "AnyOf", "AllOf", "AtLeast", "Not", "str")


def _validation_messages(exc: ValidationError) -> list[tuple[str | None, str]]:
    """Every validation error as (dotted field or None, message), in field order.

    The rule is a union (a name or ``any_of``/``all_of``/``at_least``/``not``):
    pydantic reports one error per branch, so only the most telling one of those is
    kept (the branch's own check beats "not a string / not a mapping"). A wrong
    value is quoted (``got 'sixty'``).
    """
    errs = exc.errors()
    rule = [e for e in errs if e["loc"] and e["loc"][0] == "rule"]
    picked = [e for e in errs if not (e["loc"] and e["loc"][0] == "rule")]
    if rule:
        best = next(
            (e for e in rule if e["type"] == "value_error"),
            next((e for e in rule if e["type"] not in _TYPEISH and not (len(rule) > 1 and e["type"] in ("missing", "extra_forbidden"))), rule[0]),
        )
        picked.append(best)
    out: list[tuple[str | None, str]] = []
    for e in picked:
        loc = ".".join(str(x) for x in e["loc"] if not str(x).startswith(_BRANCH)) or None
        msg = e["msg"]
        value = e.get("input")
        if e["type"] not in ("missing",) and isinstance(value, (str, int, float, bool)) and not isinstance(e.get("ctx", {}).get("error"), Exception):
            msg += f" (got {value!r})"
        if (loc, msg) not in out:
            out.append((loc, msg))
    return out


def load_criterion(path: str | Path) -> Criterion:
    """Read and validate one criterion file.

    Parameters
    ----------
    path : str or Path
        A ``.yaml``/``.yml`` or ``.toml`` file.

    Returns
    -------
    Criterion

    Raises
    ------
    InputError
        The file is missing, not UTF-8, or has another extension.
    SchemaError
        Invalid YAML/TOML, or fields that do not validate; the message names the
        file and lists every wrong field with its dotted path
        (``labs.egfr.below``), one per line when there are several.
    """
    path = Path(path)
    data = _read_mapping(path)
    data.pop("source", None)
    try:
        crit = Criterion.model_validate(data)
    except ValidationError as exc:
        found = _validation_messages(exc)
        if len(found) == 1:
            loc, msg = found[0]
            raise SchemaError(msg, path=path, field=loc) from None
        listed = "\n".join(f"  field '{loc}': {msg}" if loc else f"  {msg}" for loc, msg in found)
        raise SchemaError(f"{len(found)} errors:\n{listed}", path=path) from None
    return crit.model_copy(update={"source": str(path)})


def builtin_criteria_files(name: str = "n2c2") -> list[Path]:
    """The packaged criterion files of a set (``"n2c2"``: the 13 criteria).

    Raises
    ------
    SchemaError
        Unknown set name; the message lists the available ones.
    """
    root = resources.files("clinex.resources") / "criteria"
    sets = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("_"))
    if name not in sets:
        raise SchemaError(f"unknown criteria set {name!r}; available: {', '.join(sets)}")
    folder = Path(str(root / name))
    return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml", ".toml"))


def load_criteria(specs: str | Path | Iterable[str | Path] = "n2c2") -> list[Criterion]:
    """Load criteria from set names, files or folders, in canonical order.

    Parameters
    ----------
    specs : str, Path or iterable of them
        ``"n2c2"`` (the packaged set), criterion files, or folders of them.

    Returns
    -------
    list of Criterion
        n2c2 criteria in the official order, others after them alphabetically.

    Raises
    ------
    SchemaError
        A file does not validate, or two files define the same name.
    """
    from clinex.cohort.criteria_names import canonical_order

    if isinstance(specs, (str, Path)):
        specs = [specs]
    files: list[Path] = []
    for spec in specs:
        p = Path(spec)
        if isinstance(spec, str) and not p.exists() and re.fullmatch(r"[A-Za-z0-9_-]+", spec):
            files.extend(builtin_criteria_files(spec))
        elif p.is_dir():
            files.extend(sorted(q for q in p.iterdir() if q.suffix in (".yaml", ".yml", ".toml")))
        else:
            files.append(p)
    by_name: dict[str, Criterion] = {}
    for f in files:
        c = load_criterion(f)
        if c.name in by_name:
            raise SchemaError(f"criterion {c.name!r} is also defined in {by_name[c.name].source}", path=f, field="name")
        by_name[c.name] = c
    return [by_name[n] for n in canonical_order(by_name)]
