"""The attribute scope rule file: its records, their checks and the loader.

``resources/pv/attribute_rules.json`` holds the ConText rules of :mod:`clinex.pv.scope`
(cues, pseudo-cues, terminators), the severity words and the links that tie them to an
Effect, and the attributes whose model cues are trusted in a sentence's only event.
:func:`load_attribute_rules` reads and validates such a file; every name here is also
importable from :mod:`clinex.pv.scope`.
"""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from clinex.errors import FormatError, InputError

__all__ = [
    "ScopeRule",
    "SeverityRule",
    "SeverityLink",
    "ModelTrust",
    "AttributeRules",
    "default_rules_path",
    "load_attribute_rules",
]

_DIRECTIONS = ("FORWARD", "BACKWARD", "BIDIRECTIONAL", "TERMINATE", "PSEUDO")
_FROZEN = ConfigDict(frozen=True, extra="forbid")


class ScopeRule(BaseModel):
    """One ConText rule of the scope layer (a cue, a pseudo-cue or a terminator).

    Attributes
    ----------
    id : str
        Stable rule id (``neg.not``); attributes it decides get ``source="rule:<id>"``.
    literal : str
        The phrase (matched case-insensitively on token boundaries).
    pattern : list of dict or None
        A spaCy token pattern used instead of ``literal``.
    category : str
        A cue category named in :attr:`AttributeRules.categories`
        (``NEGATED_EXISTENCE``, ``POSSIBLE_EXISTENCE``), or any other name for
        pseudo-cues and terminators.
    direction : {"FORWARD", "BACKWARD", "BIDIRECTIONAL", "TERMINATE", "PSEUDO"}
    max_scope : int or None
        Scope length in tokens on each side it looks (None: the whole sentence).
    cue_tokens : (int, int) or None
        The tokens of the match that PHEE annotates as the cue, as a slice of the
        match (``(0, 1)``: ``"not"`` in ``"not been"``); None: the whole match.
    provenance : str
        Where the rule comes from (NegEx, medspaCy's default rules, PHEE train counts).
    blocks_negation : bool, default False
        A hedge whose phrase holds a negation word ("does not rule out", "cannot be
        excluded"): besides its own attribute, it is a pseudo-negation for the model's
        Negated cues inside it (NegEx, Chapman et al. 2001: such phrases never negate).
    """

    model_config = _FROZEN

    id: str = Field(min_length=1)
    literal: str = Field(min_length=1)
    pattern: list[dict[str, Any]] | None = None
    category: str = Field(min_length=1)
    direction: str
    max_scope: int | None = Field(default=None, gt=0)
    cue_tokens: tuple[int, int] | None = None
    provenance: str = Field(min_length=1)
    blocks_negation: bool = False

    @field_validator("cue_tokens")
    @classmethod
    def _cue_tokens(cls, v: tuple[int, int] | None) -> tuple[int, int] | None:
        if v is not None and not 0 <= v[0] < v[1]:
            raise ValueError(f"{list(v)} is not a slice [start, end) with 0 <= start < end")
        return v

    @field_validator("direction")
    @classmethod
    def _direction(cls, v: str) -> str:
        if v.upper() not in _DIRECTIONS:
            raise ValueError(f"{v!r} not in {', '.join(_DIRECTIONS)}")
        return v.upper()


class SeverityRule(BaseModel):
    """A severity word with the value it gives.

    Attributes
    ----------
    id : str
        Stable rule id (``sev.severe``).
    literal : str
        The word or phrase (case-insensitive, on word boundaries; a space also
        matches a hyphen: ``"life threatening"``).
    value : {"High", "Medium", "Low"}
        The value (the most frequent one in PHEE train for this word).
    provenance : str
    """

    model_config = _FROZEN

    id: str = Field(min_length=1)
    literal: str = Field(min_length=1)
    value: Literal["High", "Medium", "Low"]
    provenance: str = Field(min_length=1)


class SeverityLink(BaseModel):
    """How a severity word outside the Effect may still modify it.

    Attributes
    ----------
    id : str
    position : {"before", "after", "inside"}
        ``before``: the word precedes the Effect and ``between`` must match the text
        from the word's end to the Effect's start; ``after``: the word follows and
        ``between`` must match the text from the Effect's end to the word's start;
        ``inside``: the word lies inside the Effect span and ``between`` must match
        the text from the Effect's start to the word's start.
    between : str
        A regular expression, matched in full (case-insensitive).
    provenance : str
    """

    model_config = _FROZEN

    id: str = Field(min_length=1)
    position: Literal["before", "after", "inside"]
    between: str
    provenance: str = Field(min_length=1)

    @field_validator("between")
    @classmethod
    def _regex(cls, v: str) -> str:
        try:
            re.compile(v)
        except re.error as exc:
            raise ValueError(f"not a regular expression ({exc})") from None
        return v


class ModelTrust(BaseModel):
    """When a model's cue is kept although no rule scope reaches the event.

    Attributes
    ----------
    id : str
    attribute : {"Negated", "Speculated", "Severity"}
    when : {"sole_event"}
        ``sole_event``: the event is the only one predicted for the sentence, so the
        model's cue has no other event to be about.
    provenance : str
    """

    model_config = _FROZEN

    id: str = Field(min_length=1)
    attribute: Literal["Negated", "Speculated", "Severity"]
    when: Literal["sole_event"]
    provenance: str = Field(min_length=1)


class AttributeRules(BaseModel):
    """A validated attribute rule set (see :func:`load_attribute_rules`).

    Attributes
    ----------
    id : str
        Versioned name of the rule set (``pv.attribute_scope.v1``).
    categories : dict of str to {"Negated", "Speculated"}
        ConText category → PHEE attribute.
    terminated_by : dict of str to list of str
        Category → categories that end its scope (besides TERMINATE rules).
    context_rules : tuple of ScopeRule
    severity_rules : tuple of SeverityRule
    severity_links : tuple of SeverityLink
    model_trust : tuple of ModelTrust
        Attributes whose model cues are kept beyond the rule scopes, and when.
    source : str or None
        The file the rules were read from.
    """

    model_config = _FROZEN

    id: str = Field(min_length=1)
    categories: dict[str, Literal["Negated", "Speculated"]]
    terminated_by: dict[str, list[str]] = Field(default_factory=dict)
    context_rules: tuple[ScopeRule, ...]
    severity_rules: tuple[SeverityRule, ...] = ()
    severity_links: tuple[SeverityLink, ...] = ()
    model_trust: tuple[ModelTrust, ...] = ()
    source: str | None = None

    def fingerprint(self) -> str:
        """A digest of the rules (the pipeline cache key)."""
        dump = json.dumps(self.model_dump(exclude={"source"}), sort_keys=True)
        return hashlib.sha256(dump.encode("utf-8")).hexdigest()


def default_rules_path() -> str:
    """Path of the shipped rule file ``resources/pv/attribute_rules.json``."""
    return str(resources.files("clinex.resources") / "pv" / "attribute_rules.json")


def load_attribute_rules(path: str | Path | None = None) -> AttributeRules:
    """Read and validate an attribute rule file.

    Parameters
    ----------
    path : str or Path, optional
        A JSON file in the format of ``resources/pv/attribute_rules.json``; default
        the shipped file.

    Returns
    -------
    AttributeRules

    Raises
    ------
    InputError
        The file is missing (or a folder).
    EncodingError
        The file is not UTF-8 text (names the line).
    FormatError
        Not valid JSON, or a record that does not validate; the message names the
        file, the record (``context_rules[12]``) and the field, e.g.
        ``field 'direction': 'FOWARD' not in FORWARD, BACKWARD, ...``; also a rule id
        used twice, or a cue category missing from ``categories``.
    """
    from clinex.io.textfile import read_text

    p = Path(path) if path is not None else Path(default_rules_path())
    if not p.is_file():
        raise InputError("attribute rule file not found", path=p)
    try:  # the shared reader: binary and non-UTF-8 files named with the line
        data = json.loads(read_text(p))
    except json.JSONDecodeError as exc:
        raise FormatError(f"not valid JSON ({exc})", path=p) from None
    if not isinstance(data, dict):
        raise FormatError("expected a JSON object", path=p)
    data = {k: v for k, v in data.items() if not k.startswith("_")}
    try:
        rules = AttributeRules.model_validate({**data, "source": str(p)})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = list(err["loc"])
        where = loc[0] if loc else "?"
        if len(loc) > 1 and isinstance(loc[1], int):
            where = f"{loc[0]}[{loc[1]}]"
            loc = loc[2:]
        else:
            loc = loc[1:]
        field = ".".join(str(x) for x in loc) or str(where)
        raise FormatError(f"{where}: field '{field}': {err['msg']}", path=p, field=field) from None
    ids: set[str] = set()
    for kind in ("context_rules", "severity_rules", "severity_links", "model_trust"):
        for i, r in enumerate(getattr(rules, kind)):
            if r.id in ids:
                raise FormatError(f"{kind}[{i}]: rule id {r.id!r} used twice", path=p, field="id")
            ids.add(r.id)
    for i, r in enumerate(rules.context_rules):
        if r.direction in ("FORWARD", "BACKWARD", "BIDIRECTIONAL") and r.category not in rules.categories:
            raise FormatError(
                f"context_rules[{i}]: field 'category': {r.category!r} not in {', '.join(rules.categories)}",
                path=p,
                field="category",
            )
    return rules
