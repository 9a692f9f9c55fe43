"""PHEE brat standoff: read and write :class:`~clinex.pv.types.SentenceEvents`.

A sentence is ``ID.txt`` (the text) and ``ID.ann`` (tab-separated lines)::

    T3	Treatment 66 76	paclitaxel
    T6	Drug 66 76	paclitaxel
    T14	Effect 12 20;31 40	rash and swelling
    T5	Adverse_event 40 45	occur
    E1	Adverse_event:T5 arg:T3
    E2	Combination:T15 arg:T13 arg2:T14
    A1	Severity E1 High
    R1	has Arg1:T3 Arg2:T6
    R2	has_cue Arg1:E1 Arg2:T7
    R3	has_child Arg1:E1 Arg2:E2

Offsets are characters, half-open, ``start end`` pairs joined by ``;`` for
discontinuous spans (kept in the file's order); the text column is the fragments
joined by one space.

PHEE leaves most links implicit. The reader resolves them with the rules of the
authors' brat-to-JSON converter, so that ``brat/<split>`` and ``json/<split>.json``
give the same events:

* a main argument (``Subject``, ``Treatment``, ``Effect``) belongs to every event
  whose E line lists it; an unlisted one to the only event whose E line lists no
  argument, if there is exactly one such event;
* a sub-argument belongs to the main argument named by ``R has``; otherwise to the
  first main argument of its kind (file order) that it overlaps (a fragment's start
  or end falls inside one of the main's fragments); otherwise to the only main
  argument of its kind. ``Treat-Disorder`` is ``Treatment.Disorder`` and
  ``Sub-Disorder`` is ``Subject.Disorder``. A ``Drug`` named by
  ``R has Arg1:<Combination event> Arg2:<Drug>`` belongs to no main argument (it is
  that combination's drug only; the writer's way to keep a combination drug that is
  no ``Treatment.Drug``; PHEE's own files have no such line);
* a Combination event belongs to the event named by ``R has_child``, otherwise to
  the only ADE/PTE event;
* a cue belongs to the event named by ``R has_cue``; otherwise to the only event
  carrying an A line of its attribute; if no event carries one, to the only ADE/PTE
  event. The value comes from the event's A line, else ``True`` / ``True`` /
  ``"Medium"`` (:data:`clinex.pv.schema.DEFAULT_ATTRIBUTE_VALUE`). clinex's causality
  attributes are cues too (``Dechallenge_cue``, ``Rechallenge_cue``; ``A3 Dechallenge E1``),
  linked and read back the same way.

Provenance of predictions goes into brat's annotator notes, one ``#`` line per
event (written only when set; read back)::

    #1	AnnotatorNotes E1	model=clinex.pv.crf.v1; trigger_probability=0.9312; event_probability=0.97; Negated@20-23=rule:negation.not

and, for predictions, one per Drug T line the drug gazetteer knows (its canonical name
and DrugBank id, :func:`clinex.pv.normalise.drug_entry`; derived from the text, so the
reader ignores it and the writer computes it again)::

    #2	AnnotatorNotes T6	Acetaminophen (DrugBank DB00316)

``model`` and ``trigger_probability`` are :attr:`Event.source` and
:attr:`Event.score`, ``event_probability`` the sentence's
(:attr:`SentenceEvents.event_probability`), and ``<Attribute>@<start>-<end>`` the
:attr:`Attribute.source` of the cue at those offsets (``model`` or ``rule:<id>``).

A T line no rule puts into an event is dropped, as the converter drops it, and reported
by file and line (``on_warning``, default a WARNING on ``clinex.pv.formats.brat``; PHEE's
own files have none). A trigger-labelled T line that no E line uses (files of tools that
write text-bound annotations only) is read as an event that lists no argument, so the
rules above give it its arguments; the writer then gives it an E line. Other relation
types (``is_a`` ...) are ignored. The text's trailing whitespace is dropped, as the
converter does.

Offsets are read as characters (brat's own unit). When some span does not fit the text
so, but every span fits read as UTF-8 byte offsets, or else as UTF-16 code units (what
some exporters count), they are converted to characters and a notice names the file and
the unit; otherwise the first line that does not fit is an :class:`OffsetError`.

The writer makes every link explicit (all main arguments on the E line, ``has``,
``has_child``, ``has_cue`` and A lines), so what it writes reads back to the same
events (up to the order of arguments shared by several events). Within an event, a
combination drug with the span of a ``Treatment.Drug`` reuses that T line (as
PHEE's files do); any other combination drug gets its own T line, claimed by
``R has Arg1:<Combination event> Arg2:<Drug>`` so that the overlap rule does not
make it a ``Treatment.Drug`` too. brat cannot express a sub-argument without a main
argument of its kind in its event, nor a Combination without a trigger: those are
left out and reported (``on_warning``, default a WARNING on ``clinex.pv.formats.brat``).
An attribute without a cue or with value ``False`` is left out and logged at INFO.

References
----------
Stenetorp P. et al., "brat: a Web-based Tool for NLP-Assisted Text Annotation",
EACL 2012 (standoff format). Sun Z. et al., "PHEE", EMNLP 2022; converter
``preprocess/transfer_to_json.py`` in github.com/ZhaoyueSun/PHEE (linking rules).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from clinex.errors import ClinexError, InputError, report_to_stderr
from clinex.io.textfile import read_text
from clinex.pv.formats.brat_link import link
from clinex.pv.formats.brat_parse import CUE_LABELS, SUB_LABELS, parse, probability
from clinex.pv.formats.brat_write import BratWriter
from clinex.pv.schema import check_attribute, check_main_role, check_sub_role
from clinex.pv.types import SentenceEvents

__all__ = [
    "SUB_LABELS",
    "CUE_LABELS",
    "read_brat",
    "iter_brat_dir",
    "read_brat_dir",
    "to_ann",
    "write_brat",
]

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- reading


def _log_warning(message: str) -> None:
    logger.warning("%s", message)


def read_brat(
    txt_path: str | Path,
    ann_path: str | Path | None = None,
    *,
    on_warning: Callable[[str], None] | None = None,
) -> SentenceEvents:
    """Read one PHEE brat sentence.

    Parameters
    ----------
    txt_path : str or Path
        ``ID.txt``; the sentence id is the file stem.
    ann_path : str or Path, optional
        ``ID.ann``; default: next to ``txt_path``.
    on_warning : callable, optional
        Called with each message about what was read differently from the file's
        lines: a T line linked to no event (``"s1.ann:4: T3 (Effect) is linked to no
        event; not read"``), or offsets found to be UTF-8 bytes or UTF-16 code units
        and converted (``"s1.ann: offsets are UTF-8 bytes, not characters; converted
        to character offsets"``). Default: a WARNING on ``clinex.pv.formats.brat``.

    Returns
    -------
    SentenceEvents
        Events in E-line order, linked as described in the module notes.

    Raises
    ------
    InputError
        A file is missing.
    EncodingError
        A file is not UTF-8 text.
    FormatError
        A malformed line or a dangling id (names ``file:line``).
    OffsetError
        Offsets outside the text, or a text column that does not match them.
    SchemaError
        An unknown label, event type, attribute or value.
    """
    txt = Path(txt_path)
    ann = Path(ann_path) if ann_path is not None else txt.with_suffix(".ann")
    text = read_text(txt).rstrip()
    warn = on_warning if on_warning is not None else _log_warning
    parsed = parse(text, read_text(ann), ann, warn)
    models = {n["model"] for n in parsed.notes.values() if "model" in n}
    probs = {n["event_probability"] for n in parsed.notes.values() if "event_probability" in n}
    return SentenceEvents(
        id=txt.stem,
        text=text,
        events=tuple(link(parsed, warn)),
        model=models.pop() if len(models) == 1 else None,
        event_probability=probability(probs.pop()) if len(probs) == 1 else None,
    )


def iter_brat_dir(
    directory: str | Path,
    errors: Literal["raise", "skip"] = "raise",
    *,
    on_error: Callable[[ClinexError], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> Iterator[SentenceEvents]:
    """Yield every ``*.txt`` + ``*.ann`` pair of a folder, sorted by file name.

    Parameters
    ----------
    directory : str or Path
    errors : {"raise", "skip"}, default "raise"
        ``"skip"`` reports a bad sentence (``on_error``, default stderr) and goes on.
    on_warning : callable, optional
        As in :func:`read_brat`.

    Raises
    ------
    InputError
        ``directory`` is not a folder.
    """
    d = Path(directory)
    if not d.is_dir():
        raise InputError("not a folder", path=d)
    report = on_error or report_to_stderr
    for txt in sorted(d.glob("*.txt")):
        try:
            item = read_brat(txt, on_warning=on_warning)
        except ClinexError as exc:
            if errors == "raise":
                raise
            report(exc)
            continue
        yield item


def read_brat_dir(directory: str | Path) -> list[SentenceEvents]:
    """All sentences of a brat folder (sorted by file name); the first bad file raises.

    See :func:`read_brat` for the errors.
    """
    return list(iter_brat_dir(directory))


def to_ann(item: SentenceEvents, *, on_warning: Callable[[str], None] | None = None) -> str:
    """The ``.ann`` text of one sentence (T lines first, then E, R and A lines).

    Given ids (``T3``, ``E1``) are kept when they are consistent; others are
    numbered after the largest id in use. Entities with the same id, label and
    offsets are written once; a combination drug reuses its event's
    ``Treatment.Drug`` T line with the same span.

    Parameters
    ----------
    item : SentenceEvents
    on_warning : callable, optional
        Called once with one message when brat cannot hold part of ``item``
        (sub-arguments whose event has no main argument of their kind, Combinations
        without a trigger), e.g. ``"s1: not written to brat: Treatment.Disorder has
        no Treatment (event E1, 'fever' 30-35)"``; default: a WARNING on the
        ``clinex.pv.formats.brat`` logger. See the module notes for the rules.

    Raises
    ------
    SchemaError
        An unknown role or attribute in ``item``.
    """
    for ev in item.events:
        for main, subs in ev.sub_arguments.items():
            for a in subs:
                check_sub_role(main, a.role)
        for att in ev.attributes:
            check_attribute(att.name, att.value)
        for a in ev.arguments:
            check_main_role(a.role)
    writer = BratWriter(item)
    text = writer.write()
    if writer.lost:
        message = f"{item.id}: not written to brat: " + "; ".join(writer.lost)
        if on_warning is not None:
            on_warning(message)
        else:
            logger.warning("%s", message)
    return text


def write_brat(
    item: SentenceEvents,
    out_dir: str | Path,
    *,
    overwrite: bool = False,
    on_warning: Callable[[str], None] | None = None,
) -> tuple[Path, Path]:
    """Write ``<id>.txt`` (text + newline) and ``<id>.ann`` into ``out_dir``.

    Parameters
    ----------
    item : SentenceEvents
    out_dir : str or Path
        Created if missing.
    overwrite : bool, default False
        Replace existing files; otherwise an existing file raises.
    on_warning : callable, optional
        Gets the message naming what brat cannot hold (see :func:`to_ann`); the
        files are written without it.

    Returns
    -------
    (txt_path, ann_path) : tuple of Path

    Raises
    ------
    InputError
        The id is not a plain file name, a file exists and ``overwrite`` is False,
        or a file cannot be written.
    """
    if not item.id or "/" in item.id or "\\" in item.id or item.id.startswith("."):
        raise InputError(f"sentence id {item.id!r} is not a plain file name")
    d = Path(out_dir)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the output folder ({exc.strerror or exc})", path=d) from None
    txt, ann = d / f"{item.id}.txt", d / f"{item.id}.ann"
    for p in (txt, ann):
        if p.exists() and not overwrite:
            raise InputError("file exists; refusing to overwrite it (use --force to replace it)", path=p)
    from clinex.io.atomic import write_atomic

    ann_text = to_ann(item, on_warning=on_warning)
    for p, content in ((txt, item.text + "\n"), (ann, ann_text)):
        write_atomic(p, content, force=True)  # a full disk leaves no half-written file (CLX001, OS reason)
    return txt, ann
