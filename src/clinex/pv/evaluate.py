"""Score predicted PHEE events against gold: the paper's metrics (§4.2, tables 4–6).

Every event contributes span strings under keys ``EventType.Role[.SubRole]``:

* ``<type>.Trigger`` – the trigger;
* ``<type>.Subject`` / ``.Treatment`` / ``.Effect`` – main arguments;
* ``<type>.Subject.Age`` ... ``<type>.Treatment.Disorder`` – sub-arguments;
* ``<type>.Combination.Drug`` – the drugs of the Treatment's Combination sub-events;

where ``<type>`` is ``Adverse_event`` or ``Potential_therapeutic_event``. As in
the released scorer's inputs, each fragment of a discontinuous span is its own span
string. For each sentence and key, predicted and gold strings are compared as
multisets after the PHEE normalisation, with EM and token counts micro-averaged
over the corpus (see :mod:`clinex.metrics.spans` for the exact normalisation,
duplicate and zero-division rules).

* **classification** scores use the full key (event type included);
* **argument identification** follows the released scorer (``_merge_idt_instances``):
  within a sentence and an event type, the spans of all main roles are pooled into
  one ``<type>.MainArg`` bag and those of all sub-roles (``Combination.Drug``
  included) into one ``<type>.SubArg`` bag, so a span found with the wrong role
  still counts; ``all`` sums the MainArg and SubArg counts;
* **Trig-I / Trig-C**: Trig-C uses ``<type>.Trigger``; Trig-I pools the triggers of
  both event types (the paper's §4.2 definition: the trigger span alone is right);
* **Event-C**: per sentence, the *set* of event types of gold vs prediction (the
  released stage-1 script counts each type once per sentence), micro-averaged;
* **arguments**: ``main`` sums the three main roles, ``sub`` the twelve sub-roles and
  ``Combination.Drug``, ``all`` both;
* **per_role**: classification counts of one role summed over the two event types
  (the released scorer's ``_merge_cls_stats`` rows);
* **attributes**: the cue spans of ``Speculated`` / ``Negated`` / ``Severity``, keyed
  ``<type>.<attribute>`` and summed over the types as the released scorer's
  attribute rows (the value, e.g. Severity High/Low, is not scored); ``all`` sums
  the counts of the three attributes (micro-average), the pooled figure that the
  paper's attribute agreement (appendix C, 46.41 EM F1) is compared with.

References
----------
Sun Z. et al., "PHEE: A Dataset for Pharmacovigilance Event Extraction from Text",
EMNLP 2022, §4.2 and tables 4–6; released scorer ``evaluate/phee_metric.py``
(github.com/ZhaoyueSun/PHEE, commit 41489b0).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from clinex.errors import EvaluationError
from clinex.metrics.spans import SpanCounts, keyed_counts, prf
from clinex.pv.schema import (
    ATTRIBUTES,
    COMBINATION_DRUG,
    EVENT_TYPES,
    MAIN_ROLES,
    ROLE_KEYS,
    SUB_ROLE_KEYS,
    check_attribute,
    check_event_type,
    check_main_role,
    check_sub_role,
)
from clinex.pv.types import SentenceEvents
from clinex.text import Span

__all__ = ["sentence_spans", "score", "flatten", "evaluate_files"]


def sentence_spans(item: SentenceEvents) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The span strings of one sentence, by classification key and by attribute.

    Parameters
    ----------
    item : SentenceEvents

    Returns
    -------
    (by_key, by_attribute) : tuple of dict
        ``by_key``: ``"<type>.<Role>[.<Sub>]"`` (and ``"<type>.Trigger"``) -> span
        strings, one per fragment; ``by_attribute``: ``"<type>.<attribute>"`` -> cue
        strings.

    Raises
    ------
    SchemaError
        An unknown event type, role or attribute in ``item`` (field names the event).
    """
    by_key: dict[str, list[str]] = {}
    by_attr: dict[str, list[str]] = {}
    for i, ev in enumerate(item.events):
        field = f"{item.id}.events[{i}]"
        t = check_event_type(ev.event_type, field=field)
        by_key.setdefault(f"{t}.Trigger", []).extend(_strings(ev.trigger))
        for a in ev.arguments:
            check_main_role(a.role, field=field)
            by_key.setdefault(f"{t}.{a.role}", []).extend(_strings(a.span))
        for main, subs in ev.sub_arguments.items():
            for a in subs:
                check_sub_role(main, a.role, field=field)
                by_key.setdefault(f"{t}.{main}.{a.role}", []).extend(_strings(a.span))
        for c in ev.combinations:
            for d in c.drugs:
                by_key.setdefault(f"{t}.{COMBINATION_DRUG}", []).extend(_strings(d.span))
        for att in ev.attributes:
            check_attribute(att.name, field=field)
            if att.cue is not None:
                by_attr.setdefault(f"{t}.{att.name}", []).extend(_strings(att.cue))
    return by_key, by_attr


def _strings(span: Span) -> list[str]:
    """One string per fragment, as the released scorer's inputs hold them."""
    return [f.text for f in span.fragments]


_MAIN_SET = frozenset(MAIN_ROLES)


def _identification(by_key: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Pool role keys into ``<type>.Trigger`` / ``<type>.MainArg`` / ``<type>.SubArg``.

    Triggers are additionally pooled over the event types under ``Trigger`` (Trig-I).
    """
    out: dict[str, list[str]] = {}
    for key, spans in by_key.items():
        etype, role = key.split(".", 1)
        if role == "Trigger":
            out.setdefault("Trigger", []).extend(spans)
            continue
        group = "MainArg" if role in _MAIN_SET else "SubArg"
        out.setdefault(f"{etype}.{group}", []).extend(spans)
    return out


def _align(
    gold: Sequence[SentenceEvents],
    pred: Sequence[SentenceEvents],
    gold_path: str | Path | None = None,
    pred_path: str | Path | None = None,
) -> list[SentenceEvents | None]:
    if not gold and pred:
        raise EvaluationError("the gold file holds no sentences", path=gold_path)
    gold_ids: dict[str, SentenceEvents] = {}
    for g in gold:
        if g.id in gold_ids:
            raise EvaluationError(f"sentence id {g.id!r} occurs twice in the gold", path=gold_path)
        gold_ids[g.id] = g
    by_id: dict[str, SentenceEvents] = {}
    for p in pred:
        if p.id not in gold_ids:
            raise EvaluationError(
                f"predicted sentence id {p.id!r} is not in the gold", path=pred_path
            )
        if p.id in by_id:
            raise EvaluationError(
                f"sentence id {p.id!r} occurs twice in the predictions", path=pred_path
            )
        if p.text != gold_ids[p.id].text:
            raise EvaluationError(
                f"sentence {p.id!r}: predicted text differs from the gold text", path=pred_path
            )
        by_id[p.id] = p
    return [by_id.get(g.id) for g in gold]


def _sum(counts: Mapping[str, SpanCounts], keys: Sequence[str]) -> SpanCounts:
    total = SpanCounts()
    for k in keys:
        if k in counts:
            total = total + counts[k]
    return total


def _trigger_scores(c: SpanCounts) -> dict[str, float]:
    s = c.scores()
    return {
        "precision": s["em_precision"],
        "recall": s["em_recall"],
        "f1": s["em_f1"],
        "token_precision": s["token_precision"],
        "token_recall": s["token_recall"],
        "token_f1": s["token_f1"],
    }


def score(gold: Sequence[SentenceEvents], pred: Sequence[SentenceEvents]) -> dict[str, Any]:
    """PHEE scores of predicted events against gold, as a nested dict of fractions.

    Parameters
    ----------
    gold : sequence of SentenceEvents
        Gold sentences (unique ids).
    pred : sequence of SentenceEvents
        Predictions, matched to gold by ``id``, any order; a gold sentence without
        a prediction counts as predicting no event.

    Returns
    -------
    dict
        Nested; every leaf a float in [0, 1]::

            trigger.{identification,classification}.{precision,recall,f1,
                                                     token_precision,token_recall,token_f1}
            event_classification.{precision,recall,f1}
            arguments.{identification,classification}.{main,sub,all}.{em_precision,
                em_recall,em_f1,token_precision,token_recall,token_f1}
            per_role.<Role>.{em_*,token_*}     (Subject ... Treatment.Disorder, Combination.Drug)
            attributes.<Name>.{em_*,token_*}   (Speculated, Negated, Severity)
            attributes.all.{em_*,token_*}      (the three attributes' counts summed)

    Raises
    ------
    EvaluationError
        A predicted id absent from the gold, an id twice in either side, or a
        prediction whose sentence text differs from the gold's.
    SchemaError
        An unknown event type, role or attribute.

    References
    ----------
    Sun et al., EMNLP 2022, §4.2; see the module notes for the exact rules.

    Examples
    --------
    >>> from clinex.pv.formats.phee_json import parse_phee_line
    >>> g = parse_phee_line('{"id": "1", "context": "Rash after aspirin.", "annotations": [{"events": '
    ...     '[{"event_type": "Adverse_event", "Trigger": {"text": [["after"]], "start": [[5]]}}]}]}')
    >>> score([g], [g])["trigger"]["classification"]["f1"]
    1.0
    >>> score([g], [])["event_classification"]["recall"]
    0.0
    """
    return _score(gold, pred)


def _score(
    gold: Sequence[SentenceEvents],
    pred: Sequence[SentenceEvents],
    gold_path: str | Path | None = None,
    pred_path: str | Path | None = None,
) -> dict[str, Any]:
    aligned = _align(gold, pred, gold_path, pred_path)
    empty = ({}, {})
    g_spans = [sentence_spans(g) for g in gold]
    p_spans = [sentence_spans(p) if p is not None else empty for p in aligned]
    g_cls = [s[0] for s in g_spans]
    p_cls = [s[0] for s in p_spans]
    cls = keyed_counts(g_cls, p_cls)
    idt = keyed_counts([_identification(k) for k in g_cls], [_identification(k) for k in p_cls])
    att = keyed_counts([s[1] for s in g_spans], [s[1] for s in p_spans])

    ev_tp = ev_pred = ev_gold = 0
    for g, p in zip(gold, aligned):
        gt = {e.event_type for e in g.events}
        pt = {e.event_type for e in p.events} if p is not None else set()
        ev_tp += len(gt & pt)
        ev_pred += len(pt)
        ev_gold += len(gt)
    ep, er, ef = prf(ev_tp, ev_pred, ev_gold)

    def typed(roles: Sequence[str]) -> list[str]:
        return [f"{t}.{r}" for t in EVENT_TYPES for r in roles]

    arguments: dict[str, dict[str, dict[str, float]]] = {}
    main = _sum(cls, typed(MAIN_ROLES))
    sub = _sum(cls, typed(SUB_ROLE_KEYS))
    arguments["classification"] = {"main": main.scores(), "sub": sub.scores(), "all": (main + sub).scores()}
    main = _sum(idt, typed(["MainArg"]))
    sub = _sum(idt, typed(["SubArg"]))
    arguments["identification"] = {"main": main.scores(), "sub": sub.scores(), "all": (main + sub).scores()}

    return {
        "trigger": {
            "identification": _trigger_scores(_sum(idt, ["Trigger"])),
            "classification": _trigger_scores(_sum(cls, typed(["Trigger"]))),
        },
        "event_classification": {"precision": ep, "recall": er, "f1": ef},
        "arguments": arguments,
        "per_role": {role: _sum(cls, typed([role])).scores() for role in ROLE_KEYS},
        "attributes": {
            **{name: _sum(att, typed([name])).scores() for name in ATTRIBUTES},
            "all": _sum(att, typed(ATTRIBUTES)).scores(),
        },
    }


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Flatten a nested score dict to dotted keys.

    Examples
    --------
    >>> flatten({"trigger": {"identification": {"f1": 0.5}}, "x": 1.0})
    {'trigger.identification.f1': 0.5, 'x': 1.0}
    """
    out: dict[str, float] = {}
    for key, value in d.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, prefix=f"{name}."))
        else:
            out[name] = value
    return out


def evaluate_files(
    gold_path: str | Path, pred_path: str | Path, *, on_warning: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Score a PHEE JSON lines prediction file against a gold file.

    Parameters
    ----------
    gold_path, pred_path : str or Path
        PHEE JSON lines (see :mod:`clinex.pv.formats.phee_json`), matched by sentence id.
    on_warning : callable, optional
        Called with a message when the predictions cover fewer sentences than the
        gold ("predictions for 5 of 961 gold sentences; the rest count as missed").

    Returns
    -------
    dict
        As :func:`score`.

    Raises
    ------
    InputError, EncodingError, FormatError, SchemaError, OffsetError
        A file that cannot be read (names file and line).
    EvaluationError
        As :func:`score`; the message names the prediction file.
    """
    from clinex.pv.formats.phee_json import read_phee_json

    gold = read_phee_json(gold_path)
    pred = read_phee_json(pred_path)
    result = _score(gold, pred, gold_path, pred_path)
    if on_warning is not None:
        gold_ids = {g.id for g in gold}
        covered = len(gold_ids & {p.id for p in pred})
        if covered < len(gold_ids):
            on_warning(
                f"predictions for {covered} of {len(gold_ids)} gold sentences; the rest count as missed"
            )
    return result
