"""The PHEE annotation scheme: event types, argument roles and attributes.

Names are those of the PHEE corpus files (Sun et al., EMNLP 2022, §3 and
appendix A), so that a role read from a file, a role a model predicts and a key
in a score table are the same string:

* event types: ``Adverse_event`` (ADE) and ``Potential_therapeutic_event`` (PTE);
* main arguments: ``Subject``, ``Treatment``, ``Effect``;
* sub-arguments, nested in a main argument: ``Subject.Age``, ``Subject.Gender``,
  ``Subject.Population``, ``Subject.Race``, ``Subject.Disorder``,
  ``Treatment.Drug``, ``Treatment.Dosage``, ``Treatment.Freq``, ``Treatment.Route``,
  ``Treatment.Time_elapsed``, ``Treatment.Duration``, ``Treatment.Disorder``;
* the drugs of a Combination sub-event of the Treatment: ``Combination.Drug``;
* attributes with a cue: ``Speculated`` and ``Negated`` (value ``True``) and
  ``Severity`` (``High``, ``Medium`` or ``Low``);
* clinex's causality attributes, not PHEE's and never scored: ``Dechallenge`` and
  ``Rechallenge`` (value ``True``, the cue is the withdrawal or re-exposure word;
  :mod:`clinex.pv.challenge`).

The validators raise :class:`~clinex.errors.SchemaError` listing the valid names.

References
----------
Sun Z., Li J., Pergola G., Wallace B. C., John B., Greene N., Kim J., He Y.
"PHEE: A Dataset for Pharmacovigilance Event Extraction from Text", EMNLP 2022,
§3 (annotation scheme) and appendix A (guidelines).
"""

from __future__ import annotations

from pathlib import Path

from clinex.errors import SchemaError

__all__ = [
    "EVENT_TYPES",
    "MAIN_ROLES",
    "SUB_ROLES",
    "COMBINATION",
    "COMBINATION_DRUG",
    "ATTRIBUTES",
    "CHALLENGE_ATTRIBUTES",
    "EVENT_ATTRIBUTES",
    "ATTRIBUTE_VALUES",
    "DEFAULT_ATTRIBUTE_VALUE",
    "SUB_ROLE_KEYS",
    "ROLE_KEYS",
    "role_key",
    "check_event_type",
    "check_main_role",
    "check_sub_role",
    "check_attribute",
    "check_role_key",
]

#: Event types (paper §3.1): adverse drug event, potential therapeutic event.
EVENT_TYPES: tuple[str, ...] = ("Adverse_event", "Potential_therapeutic_event")

#: Main argument roles (paper §3.2).
MAIN_ROLES: tuple[str, ...] = ("Subject", "Treatment", "Effect")

#: Sub-argument roles under each main role that has them (paper §3.2, appendix A).
SUB_ROLES: dict[str, tuple[str, ...]] = {
    "Subject": ("Age", "Gender", "Population", "Race", "Disorder"),
    "Treatment": ("Drug", "Dosage", "Freq", "Route", "Time_elapsed", "Duration", "Disorder"),
}

#: Event type of a Combination sub-event (drugs given together), held by a Treatment.
COMBINATION = "Combination"

#: Role key of the drugs of a Combination sub-event.
COMBINATION_DRUG = "Combination.Drug"

#: Event attributes, each signalled by a cue span (paper §3.3): the attributes PHEE
#: annotates and its scorer counts.
ATTRIBUTES: tuple[str, ...] = ("Speculated", "Negated", "Severity")

#: clinex's causality attributes (issue 23), not part of PHEE: a positive dechallenge
#: (the reaction abated when the drug was withdrawn or its dose reduced) and a positive
#: rechallenge (it came back on re-exposure), the WHO-UMC causality criteria's evidence
#: for "certain" / "probable" (:mod:`clinex.pv.challenge`). Written to PHEE JSON and brat
#: like the others; :mod:`clinex.pv.evaluate` scores only :data:`ATTRIBUTES`.
CHALLENGE_ATTRIBUTES: tuple[str, ...] = ("Dechallenge", "Rechallenge")

#: Every attribute an event may carry: PHEE's, then clinex's.
EVENT_ATTRIBUTES: tuple[str, ...] = ATTRIBUTES + CHALLENGE_ATTRIBUTES

#: Allowed values per attribute. ``False`` is accepted for the binary ones (a model
#: may say "not speculated"), although the corpus only stores ``True``.
ATTRIBUTE_VALUES: dict[str, tuple[bool | str, ...]] = {
    "Speculated": (True, False),
    "Negated": (True, False),
    "Severity": ("High", "Medium", "Low"),
    "Dechallenge": (True, False),
    "Rechallenge": (True, False),
}

#: Value PHEE's converter gives a cue whose attribute line is missing (clinex's
#: causality attributes: ``True``, as for the other binary ones).
DEFAULT_ATTRIBUTE_VALUE: dict[str, bool | str] = {
    "Speculated": True,
    "Negated": True,
    "Severity": "Medium",
    "Dechallenge": True,
    "Rechallenge": True,
}

#: Every sub-argument key, ``Main.Sub``, plus ``Combination.Drug``, in scheme order.
SUB_ROLE_KEYS: tuple[str, ...] = tuple(
    f"{main}.{sub}" for main, subs in SUB_ROLES.items() for sub in subs
) + (COMBINATION_DRUG,)

#: Every argument key scored per role: the main roles, then the sub-argument keys.
ROLE_KEYS: tuple[str, ...] = MAIN_ROLES + SUB_ROLE_KEYS


def _where(path: str | Path | None, line: int | None, field: str | None) -> dict:
    return {"path": path, "line": line, "field": field}


def role_key(main: str, sub: str | None = None) -> str:
    """The dotted key of a role: ``"Subject"``, ``"Subject.Age"``, ``"Combination.Drug"``.

    Parameters
    ----------
    main : str
        Main role, or ``"Combination"`` for the drugs of a Combination sub-event.
    sub : str, optional
        Sub-argument role.

    Returns
    -------
    str

    Raises
    ------
    SchemaError
        If the key is not one of :data:`ROLE_KEYS`.

    Examples
    --------
    >>> role_key("Treatment", "Drug")
    'Treatment.Drug'
    """
    key = main if sub is None else f"{main}.{sub}"
    return check_role_key(key)


def _one_of(
    value: str,
    valid: tuple[str, ...],
    what: str,
    path: str | Path | None,
    line: int | None,
    field: str | None,
) -> str:
    """``value`` if it is in ``valid``; else SchemaError naming it and listing ``valid``."""
    if value not in valid:
        raise SchemaError(
            f"unknown {what} {value!r}; valid: {', '.join(valid) if valid else 'none'}",
            **_where(path, line, field),
        )
    return value


def check_event_type(
    name: str,
    *,
    path: str | Path | None = None,
    line: int | None = None,
    field: str | None = None,
) -> str:
    """Return ``name`` if it is an event type, else raise.

    Raises
    ------
    SchemaError
        Naming the bad value and listing :data:`EVENT_TYPES`.
    """
    return _one_of(name, EVENT_TYPES, "event type", path, line, field)


def check_main_role(
    role: str,
    *,
    path: str | Path | None = None,
    line: int | None = None,
    field: str | None = None,
) -> str:
    """Return ``role`` if it is a main argument role, else raise.

    Raises
    ------
    SchemaError
        Naming the bad value and listing :data:`MAIN_ROLES`.
    """
    return _one_of(role, MAIN_ROLES, "main argument role", path, line, field)


def check_sub_role(
    main: str,
    sub: str,
    *,
    path: str | Path | None = None,
    line: int | None = None,
    field: str | None = None,
) -> str:
    """Return ``sub`` if it is a sub-argument role of ``main``, else raise.

    Raises
    ------
    SchemaError
        If ``main`` has no sub-arguments (``Effect``) or ``sub`` is not one of
        ``SUB_ROLES[main]``; the message lists the valid names.
    """
    check_main_role(main, path=path, line=line, field=field)
    return _one_of(sub, SUB_ROLES.get(main, ()), f"{main} sub-argument role", path, line, field)


def check_attribute(
    name: str,
    value: object = None,
    *,
    path: str | Path | None = None,
    line: int | None = None,
    field: str | None = None,
) -> str:
    """Return ``name`` if it is an attribute (and ``value``, if given, is allowed).

    Parameters
    ----------
    name : str
        ``Speculated``, ``Negated`` or ``Severity`` (PHEE's), or ``Dechallenge`` or
        ``Rechallenge`` (clinex's, :data:`CHALLENGE_ATTRIBUTES`).
    value : bool or str, optional
        Checked against :data:`ATTRIBUTE_VALUES` when not None.

    Raises
    ------
    SchemaError
        Listing the valid attribute names or values.
    """
    _one_of(name, EVENT_ATTRIBUTES, "attribute", path, line, field)
    if value is not None:
        allowed = ATTRIBUTE_VALUES[name]
        # bool is a subclass of int: compare type and value so that 1 != True here
        if not any(type(value) is type(a) and value == a for a in allowed):
            raise SchemaError(
                f"attribute {name} has value {value!r}; valid: {', '.join(map(repr, allowed))}",
                **_where(path, line, field),
            )
    return name


def check_role_key(
    key: str,
    *,
    path: str | Path | None = None,
    line: int | None = None,
    field: str | None = None,
) -> str:
    """Return ``key`` if it is one of :data:`ROLE_KEYS`, else raise.

    Raises
    ------
    SchemaError
        Listing the valid keys.
    """
    return _one_of(key, ROLE_KEYS, "role", path, line, field)
