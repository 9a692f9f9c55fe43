"""PHEE JSON lines: read and write :class:`~clinex.pv.types.SentenceEvents`.

One sentence per line::

    {"id": "10907391_3", "context": "...", "is_mult_event": false,
     "annotations": [{"events": [{"event_id": "E1", "event_type": "Adverse_event",
        "Trigger": {"text": [["occur"]], "start": [[40]], "entity_id": ["T5"]},
        "Treatment": {"text": [["paclitaxel"]], "start": [[66]], "entity_id": ["T3"],
                      "Drug": {"text": [["paclitaxel"]], "start": [[66]], "entity_id": ["T6"]}},
        "Effect": {...}, "Speculated": {"text": [["can"]], ..., "value": true}}]}]}

Every span node holds ``text`` and ``start``: one inner list per argument
instance, one item per discontinuous fragment, offsets in characters of
``context``; a fragment ends at ``start + len(text)`` (the format has no end
offsets). Fragments keep the corpus order, which is not always text order
(36 argument instances in train + dev list a later fragment first), and the fragment text is kept
as given (e.g. the truncated ``"mycophenolate mofeti"`` of sentence 18159131_4),
so that :func:`to_phee_dict` gives back the corpus line byte for byte.

Conventions of the reader:

* only ``annotations[0]`` is read (as in the authors' scripts); ``is_mult_event``
  is not read but recomputed on writing (several events, or a Combination);
* ``event_id`` and ``entity_id`` may be missing (predictions); the writer then
  numbers them (``E1``..., ``T1``... after the largest id in use);
* attributes with several cues become one :class:`~clinex.pv.types.Attribute`
  per cue, with the same value.

Provenance of predictions (clinex's additions, written only when set, so that gold
corpus lines round-trip unchanged): a sentence may carry ``model`` (the versioned
model id), ``offset`` (where a plain-text input's sentence starts in its file) and
``event_probability`` (the sentence-level event decision,
:mod:`clinex.pv.gate`); an event ``model`` (:attr:`Event.source`) and
``trigger_probability`` (:attr:`Event.score`); an attribute node ``source``, one
string per cue (``"model"`` or ``"rule:<id>"``); and the causality attributes
``Dechallenge`` / ``Rechallenge`` (:data:`clinex.pv.schema.CHALLENGE_ATTRIBUTES`),
attribute nodes like PHEE's (cue span, ``value``, ``source``) under keys PHEE's scorer
does not read; an argument node (main or sub-argument) ``source`` and ``from_sentence``,
one item per instance (``null`` where unset), for an argument taken from another sentence
of the record (:attr:`Argument.source`, :attr:`Argument.from_sentence`; :mod:`clinex.pv.record`).

A record holding predictions (``model`` set) also gets ``pairs``, when it has any: its
case-level drug -> reaction pairs (:func:`clinex.pv.pairs.record_pairs`, one object per
:class:`~clinex.pv.types.Pair` with its fields, ``evidence`` as ``[[start, end], ...]``; no
``pairs`` key: none).
They are derived from the events, so the reader does not read them (nor does PHEE's
scorer or :mod:`clinex.pv.evaluate`) and the writer computes them again: reading a file
and writing it back gives the same bytes. ``to_phee_dict(item, pairs=True / False)``
forces them on or off.

A record holding predictions also gets, in each ``Treatment.Drug`` and Combination
``Drug`` node, ``normalised``: one item per instance, the gazetteer's entry
``{"name", "drugbank_id", "mesh_tree"}`` (:func:`clinex.pv.normalise.drug_entry`) or
``null`` for a drug it does not know (kept as its text). Derived from the text as the
pairs are, it is not read (whatever its form) but computed again on writing; the scorer
does not read it. ``to_phee_dict(item, normalised=True / False)`` forces it on or off.

The reader lives in :mod:`clinex.pv.formats.phee_json_read` (with its speed notes), the
writer in :mod:`clinex.pv.formats.phee_json_write`; every public name is importable from
here.

References
----------
Sun et al., "PHEE: A Dataset for Pharmacovigilance Event Extraction from Text",
EMNLP 2022; data format of the released corpus (github.com/ZhaoyueSun/PHEE, data/json).
"""

from __future__ import annotations

from clinex.pv.formats.phee_json_read import (  # noqa: F401  (the batch size and collector pause: tests/io)
    _BATCH_LINES,
    _gc_paused,
    iter_phee_json,
    parse_phee_dict,
    parse_phee_line,
    read_phee_json,
)
from clinex.pv.formats.phee_json_write import dumps_phee, to_phee_dict, write_phee_json

__all__ = [
    "parse_phee_line",
    "parse_phee_dict",
    "iter_phee_json",
    "read_phee_json",
    "to_phee_dict",
    "dumps_phee",
    "write_phee_json",
]
