"""PHEE brat standoff, writing: the ``.ann`` lines of one sentence's events (issue 24).

:class:`BratWriter` makes every link explicit (module notes of
:mod:`clinex.pv.formats.brat`); :func:`clinex.pv.formats.brat.to_ann` checks the
events and calls it.
"""

from __future__ import annotations

import logging
import re

from clinex.pv.formats.brat_parse import CUE_LABEL_OF, SUB_LABEL_OF
from clinex.pv.schema import COMBINATION
from clinex.pv.types import Argument, Event, SentenceEvents
from clinex.text import Span

__all__ = ["BratWriter"]

logger = logging.getLogger("clinex.pv.formats.brat")


def _where(span: Span) -> str:
    """``'text' 16-23`` (fragments joined by ``,``) for a warning."""
    return f"'{span.text}' " + ",".join(f"{s}-{e}" for s, e in span.offsets())


class BratWriter:
    """The ``.ann`` text of one sentence: T lines first, then E, R and A lines, then notes
    (:meth:`write`); ``lost`` lists what brat cannot hold."""

    def __init__(self, item: SentenceEvents) -> None:
        self.item = item
        self.lines: list[str] = []
        self.lost: list[str] = []  # what brat cannot express, for the warning
        self.sub_ids: set[str] = set()  # T ids written as Arg2 of `R has <main>`
        self.combo_drugs: list[tuple[str, str]] = []  # (combination E id, drug T id)
        self.t_lines: list[str] = []
        self.notes: list[str] = []
        self.known: dict[str, tuple[str, tuple[tuple[int, int], ...]]] = {}
        self.used_e: set[str] = set()
        self.n = {"T": 0, "E": 0, "A": 0, "R": 0}
        taken = []
        for ev in item.events:
            taken += [ev.event_id, ev.trigger_id] + [c.event_id for c in ev.combinations]
            taken += [c.trigger_id for c in ev.combinations]
            taken += [a.entity_id for a in ev.arguments] + [a.entity_id for a in ev.attributes]
            taken += [a.entity_id for v in ev.sub_arguments.values() for a in v]
            taken += [d.entity_id for c in ev.combinations for d in c.drugs]
        for t in taken:
            m = re.fullmatch(r"([TE])(\d{1,18})", t or "")  # a longer number cannot collide with a new id
            if m:
                self.n[m.group(1)] = max(self.n[m.group(1)], int(m.group(2)))

    def new(self, kind: str) -> str:
        """The next free id of ``kind`` (``T``, ``E``, ``A`` or ``R``): past every id the events carry."""
        self.n[kind] += 1
        return f"{kind}{self.n[kind]}"

    def entity(self, label: str, span: Span, given: str | None) -> str:
        """The T id of ``label`` at ``span``, writing its T line once: the ``given`` id when
        it is a free T id or names the same entity, else a new one."""
        key = (label, tuple(span.offsets()))
        if given is not None and re.fullmatch(r"T\d+", given):
            if self.known.get(given) == key:
                return given
            if given not in self.known:
                self.known[given] = key
                self._t_line(given, label, span)
                return given
        tid = self.new("T")
        self.known[tid] = key
        self._t_line(tid, label, span)
        return tid

    def _t_line(self, tid: str, label: str, span: Span) -> None:
        offsets = ";".join(f"{s} {e}" for s, e in span.offsets())
        self.t_lines.append(f"{tid}\t{label} {offsets}\t{span.text}")

    def event_id(self, given: str | None) -> str:
        """An E id for one event: ``given`` when it is an unused E id, else a new one."""
        eid = given if given is not None and re.fullmatch(r"E\d+", given) and given not in self.used_e else None
        eid = eid or self.new("E")
        self.used_e.add(eid)
        return eid

    def write(self) -> str:
        """The whole ``.ann`` text of the sentence (``lost`` filled with what brat cannot hold)."""
        item = self.item
        for ev in item.events:
            trig = self.entity(ev.event_type, ev.trigger, ev.trigger_id)
            eid = self.event_id(ev.event_id)
            main_ids = [self.entity(a.role, a.span, a.entity_id) for a in ev.arguments]
            args = " ".join(f"{'arg' if i == 0 else f'arg{i + 1}'}:{t}" for i, t in enumerate(main_ids))
            self.lines.append(f"{eid}\t{ev.event_type}:{trig}" + (f" {args}" if args else ""))
            first_main = {}
            for a, t in zip(ev.arguments, main_ids):
                first_main.setdefault(a.role, t)
            drug_ids = self._sub_arguments(ev, eid, first_main)
            for c in ev.combinations:
                if c.trigger is None:
                    drugs_text = ", ".join(_where(d.span) for d in c.drugs)
                    self.lost.append(f"Combination without a trigger (event {eid}; drugs {drugs_text or 'none'})")
                    continue
                ct = self.entity(COMBINATION, c.trigger, c.trigger_id)
                cid = self.event_id(c.event_id)
                drugs = [self._combination_drug(d, drug_ids) for d in c.drugs]
                self.combo_drugs += [(cid, t) for t in drugs]
                dargs = " ".join(f"{'arg' if i == 0 else f'arg{i + 1}'}:{t}" for i, t in enumerate(drugs))
                self.lines.append(f"{cid}\t{COMBINATION}:{ct}" + (f" {dargs}" if dargs else ""))
                self.lines.append(f"{self.new('R')}\thas_child Arg1:{eid} Arg2:{cid}")
            valued: set[str] = set()
            for att in ev.attributes:
                if att.cue is None or att.value is False:
                    logger.info("%s: attribute %s without cue or False; not written", item.id, att.name)
                    continue
                cue = self.entity(CUE_LABEL_OF[att.name], att.cue, att.entity_id)
                self.lines.append(f"{self.new('R')}\thas_cue Arg1:{eid} Arg2:{cue}")
                if att.name not in valued:
                    valued.add(att.name)
                    value = "" if att.value is True else f" {att.value}"
                    self.lines.append(f"{self.new('A')}\t{att.name} {eid}{value}")
            self._note(ev, eid)
        self._claim_combination_drugs()
        self._drug_notes()
        return "\n".join(self.t_lines + self.lines + self.notes) + "\n"

    def _drug_notes(self) -> None:
        """One ``AnnotatorNotes T<n>`` line per Drug T line the gazetteer knows (predictions only)."""
        item = self.item
        if item.model is None and not any(ev.source is not None for ev in item.events):
            return
        from clinex.pv.normalise import drug_entry, drug_label

        for tid, (label, offsets) in self.known.items():
            if label != "Drug":
                continue
            entry = drug_entry(" ".join(item.text[s:e] for s, e in offsets))
            if entry is not None:
                self.notes.append(f"#{len(self.notes) + 1}\tAnnotatorNotes {tid}\t{drug_label(entry)}")

    def _note(self, ev: Event, eid: str) -> None:
        """The event's provenance as an ``AnnotatorNotes`` line (none for gold events)."""
        pairs = []
        if ev.source is not None:
            pairs.append(f"model={ev.source}")
        if ev.score is not None:
            pairs.append(f"trigger_probability={ev.score}")
        if self.item.event_probability is not None and pairs:
            pairs.append(f"event_probability={self.item.event_probability}")
        pairs += [
            f"{a.name}@{a.cue.start}-{a.cue.end}={a.source}"
            for a in ev.attributes
            if a.source is not None and a.cue is not None
        ]
        if pairs:
            self.notes.append(f"#{len(self.notes) + 1}\tAnnotatorNotes {eid}\t{'; '.join(pairs)}")

    def _sub_arguments(self, ev: Event, eid: str, first_main: dict[str, str]) -> dict[tuple, str]:
        """Write the event's sub-arguments (``R has``); return ``{Drug offsets: T id}``."""
        drug_ids: dict[tuple, str] = {}
        for main, subs in ev.sub_arguments.items():
            for a in subs:
                if main not in first_main:
                    self.lost.append(f"{main}.{a.role} has no {main} (event {eid}, {_where(a.span)})")
                    continue
                sid = self.entity(SUB_LABEL_OF[(main, a.role)], a.span, a.entity_id)
                self.lines.append(f"{self.new('R')}\thas Arg1:{first_main[main]} Arg2:{sid}")
                self.sub_ids.add(sid)
                if (main, a.role) == ("Treatment", "Drug"):
                    drug_ids.setdefault(tuple(a.span.offsets()), sid)
        return drug_ids

    def _combination_drug(self, drug: Argument, drug_ids: dict[tuple, str]) -> str:
        """T id of a combination drug: its own given id if already written with this
        span, else the event's ``Treatment.Drug`` with this span, else a new T line."""
        key = tuple(drug.span.offsets())
        if drug.entity_id is not None and self.known.get(drug.entity_id) == ("Drug", key):
            return drug.entity_id
        if key in drug_ids:
            return drug_ids[key]
        return self.entity("Drug", drug.span, drug.entity_id)

    def _claim_combination_drugs(self) -> None:
        """``R has Arg1:<Combination> Arg2:<Drug>`` for each combination drug that is no
        sub-argument, so that the reader's overlap rule leaves it to the combination."""
        claimed = set(self.sub_ids)
        for cid, tid in self.combo_drugs:
            if tid not in claimed:
                claimed.add(tid)
                self.lines.append(f"{self.new('R')}\thas Arg1:{cid} Arg2:{tid}")
