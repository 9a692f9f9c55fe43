"""Token labels <-> PHEE events.

Two label layers describe one sentence, one label per token (I-O scheme: a token is
inside a span of a role or outside; a run of tokens with the same label is one span):

``args``
    a combined label ``MAIN|SUB``. ``MAIN`` is ``O``, a trigger (the event type,
    ``Adverse_event`` or ``Potential_therapeutic_event``) or a main-argument role
    (``Subject``, ``Treatment``, ``Effect``); ``SUB`` is ``O`` or a sub-argument role
    prefixed with its main role (``Subject.Age``, ``Treatment.Drug``,
    ``Treatment.Disorder``, ...). Sub-arguments nest inside main arguments in PHEE,
    so one token carries both; ``O|O`` is written ``O``.
``attr``
    attribute cues: ``O``, ``Speculated``, ``Negated``, ``Severity.High``,
    ``Severity.Medium``, ``Severity.Low`` (PHEE's severity levels).

:func:`encode` turns gold events into these labels (for training a tagger);
:func:`decode` turns predicted labels back into :class:`~clinex.pv.types.Event` s:
one event per trigger span, each main argument, attribute cue and orphan
sub-argument attached to the nearest trigger (token distance), and sub-arguments inside
a predicted main argument attached to the event(s) holding that argument. Combination sub-events are not labelled; an event with two or
more predicted drugs gets one Combination of them.

References
----------
Sun et al. (2022), "PHEE: A dataset for pharmacovigilance event extraction from
text", EMNLP, section 3 (annotation scheme) and section 4 (sequence labelling with
joint main/sub-argument labels).
"""

from __future__ import annotations

from collections.abc import Sequence

from clinex.pv.types import Argument, Attribute, Combination, Event, SentenceEvents
from clinex.text import Fragment, Span

__all__ = [
    "OUTSIDE",
    "SEP",
    "MAIN_ROLES",
    "TRIGGER_TYPES",
    "ATTRIBUTE_LABELS",
    "encode",
    "decode",
    "label_runs",
]

OUTSIDE = "O"
SEP = "|"
MAIN_ROLES = ("Subject", "Treatment", "Effect")
TRIGGER_TYPES = ("Adverse_event", "Potential_therapeutic_event")
ATTRIBUTE_LABELS = ("Speculated", "Negated", "Severity.High", "Severity.Medium", "Severity.Low")
_SHARED_ROLES: tuple[str, ...] = ()


def _covered(tokens: Sequence[tuple[int, int]], span: Span) -> list[int]:
    """Indices of the tokens that share at least one character with ``span``."""
    return [i for i, (s, e) in enumerate(tokens) if span.overlaps(s, e)]


def encode(item: SentenceEvents, tokens: Sequence[tuple[int, int]]) -> dict[str, list[str]]:
    """Gold events -> one label per token in each layer.

    Parameters
    ----------
    item : SentenceEvents
        A sentence with its gold events (character offsets into ``item.text``).
    tokens : sequence of (int, int)
        Token offsets of ``item.text`` (see :func:`clinex.pv.features.tokenize`).

    Returns
    -------
    dict
        ``{"args": [...], "attr": [...]}``, each a list of ``len(tokens)`` labels.
        Where spans overlap in one slot, triggers win over main arguments (60 of
        ~3,000 triggers overlap an Effect in the training split) and a later span
        wins over an earlier one.
    """
    n = len(tokens)
    main = [OUTSIDE] * n
    sub = [OUTSIDE] * n
    attr = [OUTSIDE] * n
    for ev in item.events:
        for arg in ev.arguments:
            for i in _covered(tokens, arg.span):
                main[i] = arg.role
        for parent, subs in ev.sub_arguments.items():
            for arg in subs:
                for i in _covered(tokens, arg.span):
                    sub[i] = f"{parent}.{arg.role}"
        for att in ev.attributes:
            if att.cue is None:
                continue
            name = att.name if att.name != "Severity" else f"Severity.{att.value}"
            for i in _covered(tokens, att.cue):
                attr[i] = name
    for ev in item.events:
        for i in _covered(tokens, ev.trigger):
            main[i] = ev.event_type
    args = [
        OUTSIDE if m == OUTSIDE and s == OUTSIDE else f"{m}{SEP}{s}" for m, s in zip(main, sub)
    ]
    return {"args": args, "attr": attr}


def label_runs(labels: Sequence[str]) -> list[tuple[str, int, int]]:
    """Runs of equal, non-``O`` labels: ``(label, first_token, last_token + 1)``.

    Examples
    --------
    >>> label_runs(["O", "Effect", "Effect", "O", "Treatment"])
    [('Effect', 1, 3), ('Treatment', 4, 5)]
    """
    runs: list[tuple[str, int, int]] = []
    start = 0
    for i in range(1, len(labels) + 1):
        if i == len(labels) or labels[i] != labels[start]:
            if labels[start] != OUTSIDE:
                runs.append((labels[start], start, i))
            start = i
    return runs


def _split(labels: Sequence[str]) -> tuple[list[str], list[str]]:
    main, sub = [], []
    for lab in labels:
        m, _, s = lab.partition(SEP)
        main.append(m or OUTSIDE)
        sub.append(s or OUTSIDE)
    return main, sub


def _span(text: str, tokens: Sequence[tuple[int, int]], first: int, last: int, label: str) -> Span:
    start, end = tokens[first][0], tokens[last - 1][1]
    return Span(fragments=(Fragment(start=start, end=end, text=text[start:end]),), label=label)


def _distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Tokens between two half-open token ranges (0 when they touch or overlap)."""
    return max(0, b[0] - a[1], a[0] - b[1])


def _nearest(target: tuple[int, int], triggers: Sequence[tuple[int, int]]) -> int:
    """Index of the trigger closest to ``target``; ties go to the earlier trigger."""
    return min(range(len(triggers)), key=lambda k: (_distance(target, triggers[k]), k))


def decode(
    text: str,
    tokens: Sequence[tuple[int, int]],
    args: Sequence[str],
    attr: Sequence[str] | None = None,
    *,
    trigger_scores: Sequence[float] | None = None,
    source: str | None = None,
    share_roles: Sequence[str] = _SHARED_ROLES,
    combine_drugs: int = 2,
) -> list[Event]:
    """Predicted token labels -> events.

    Parameters
    ----------
    text : str
        The sentence the tokens index into.
    tokens : sequence of (int, int)
        Token offsets, length ``n``.
    args : sequence of str
        ``n`` labels of the ``args`` layer (``MAIN|SUB`` or ``O``).
    attr : sequence of str, optional
        ``n`` labels of the ``attr`` layer.
    trigger_scores : sequence of float, optional
        Per-token confidence of the token's trigger label in [0, 1]; an event's
        ``score`` is the mean over its trigger tokens.
    source : str, optional
        Model name and version recorded on each event and span.
    share_roles : sequence of str, default ()
        Main roles copied to an event that found none, from the event nearest to it
        (e.g. ``("Subject", "Treatment")``). Off by default: on the PHEE dev split
        copying lowered main-argument EM F1 by 0.02 with the CRF.
    combine_drugs : int, default 2
        A Treatment span holding at least this many predicted ``Drug``
        sub-arguments gets one Combination sub-event listing them (without a
        trigger); 0 switches this off. In the PHEE training split, 348 of 439 events
        whose drugs (two or more) lie in one Treatment span hold a Combination, but
        only 28 of 65 events whose drugs lie apart; 828 of the 829 combined drugs
        are also Treatment drugs.

    Returns
    -------
    list of Event
        In trigger order; empty when no trigger was labelled (arguments without a
        trigger are dropped, as an event needs a trigger).

    Raises
    ------
    ValueError
        If the label sequences and ``tokens`` differ in length.
    """
    n = len(tokens)
    if len(args) != n or (attr is not None and len(attr) != n):
        raise ValueError(f"{n} tokens but {len(args)} args / {len(attr or [])} attr labels")
    main, sub = _split(args)
    trig_runs = [r for r in label_runs(main) if r[0] in TRIGGER_TYPES]
    if not trig_runs:
        return []
    trig_rng = [(a, b) for _, a, b in trig_runs]
    ev_args = _main_arguments(text, tokens, main, trig_rng)
    _share_roles(ev_args, trig_rng, share_roles)
    ev_subs = _sub_arguments(text, tokens, sub, ev_args, trig_rng)
    ev_attrs = _attributes(text, tokens, attr or [OUTSIDE] * n, trig_rng)
    return [
        Event(
            event_type=etype,
            trigger=_span(text, tokens, a, b, "Trigger"),
            arguments=tuple(x for x, _ in sorted(ev_args[k], key=lambda p: (MAIN_ROLES.index(p[0].role), p[1]))),
            sub_arguments={p: tuple(v) for p, v in ev_subs[k].items()},
            combinations=_combinations(ev_args[k], ev_subs[k], combine_drugs),
            attributes=tuple(ev_attrs[k]),
            score=None if trigger_scores is None else round(sum(trigger_scores[a:b]) / (b - a), 4),
            source=source,
        )
        for k, (etype, a, b) in enumerate(trig_runs)
    ]


#: A main argument with its token range ``[a, b)``.
_Placed = tuple[Argument, tuple[int, int]]


def _main_arguments(
    text: str, tokens: Sequence[tuple[int, int]], main: Sequence[str], trig_rng: Sequence[tuple[int, int]]
) -> list[list[_Placed]]:
    """Each main-argument run of ``main``, attached to the nearest trigger (one list per trigger)."""
    ev_args: list[list[_Placed]] = [[] for _ in trig_rng]
    for role, a, b in label_runs(main):
        if role in MAIN_ROLES:
            arg = Argument(role=role, span=_span(text, tokens, a, b, role))
            ev_args[_nearest((a, b), trig_rng)].append((arg, (a, b)))
    return ev_args


def _share_roles(
    ev_args: list[list[_Placed]], trig_rng: Sequence[tuple[int, int]], share_roles: Sequence[str]
) -> None:
    """Copy each role of ``share_roles`` to the events that have none, from the nearest
    event holding it (in place; see ``share_roles`` of :func:`decode`)."""
    for role in share_roles:
        holders = [k for k in range(len(ev_args)) if any(x.role == role for x, _ in ev_args[k])]
        if not holders:
            continue
        for k in range(len(ev_args)):
            if k in holders:
                continue
            src = min(holders, key=lambda h: (_distance(trig_rng[h], trig_rng[k]), h))
            ev_args[k].extend(p for p in ev_args[src] if p[0].role == role)


def _sub_arguments(
    text: str,
    tokens: Sequence[tuple[int, int]],
    sub: Sequence[str],
    ev_args: Sequence[Sequence[_Placed]],
    trig_rng: Sequence[tuple[int, int]],
) -> list[dict[str, list[Argument]]]:
    """Each sub-argument run of ``sub``, given to every event whose main argument of its
    parent role overlaps it, else to the nearest trigger's event."""
    ev_subs: list[dict[str, list[Argument]]] = [{} for _ in trig_rng]
    for label, a, b in label_runs(sub):
        parent, _, role = label.partition(".")
        arg = Argument(role=role, span=_span(text, tokens, a, b, role))
        homes = [
            k
            for k in range(len(trig_rng))
            if any(x.role == parent and a < rng[1] and rng[0] < b for x, rng in ev_args[k])
        ]
        for k in homes or [_nearest((a, b), trig_rng)]:
            ev_subs[k].setdefault(parent, []).append(arg)
    return ev_subs


def _attributes(
    text: str, tokens: Sequence[tuple[int, int]], attr: Sequence[str], trig_rng: Sequence[tuple[int, int]]
) -> list[list[Attribute]]:
    """Each cue run of ``attr``, an attribute of the nearest trigger's event (the first cue
    of each attribute name per event)."""
    ev_attrs: list[list[Attribute]] = [[] for _ in trig_rng]
    for label, a, b in label_runs(attr):
        name, _, level = label.partition(".")
        value: bool | str = level if name == "Severity" else True
        k = _nearest((a, b), trig_rng)
        if any(x.name == name for x in ev_attrs[k]):
            continue
        ev_attrs[k].append(Attribute(name=name, value=value, cue=_span(text, tokens, a, b, name)))
    return ev_attrs


def _combinations(
    args: Sequence[_Placed], subs: dict[str, list[Argument]], combine_drugs: int
) -> tuple[Combination, ...]:
    """One Combination per Treatment span holding at least ``combine_drugs`` Drug
    sub-arguments (none when ``combine_drugs`` is 0)."""
    if not combine_drugs:
        return ()
    combos: tuple[Combination, ...] = ()
    for arg, _rng in args:
        if arg.role != "Treatment":
            continue
        drugs = tuple(
            x for x in subs.get("Treatment", []) if x.role == "Drug" and arg.span.overlaps(x.span.start, x.span.end)
        )
        if len(drugs) >= combine_drugs:
            combos += (Combination(drugs=drugs),)
    return combos
