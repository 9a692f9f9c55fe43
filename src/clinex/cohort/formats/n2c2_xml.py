"""Reader and writer for the n2c2 2018 Track 1 (cohort selection) XML files.

One file holds one patient::

    <?xml version="1.0" encoding="UTF-8" ?>
    <PatientMatching>
    <TEXT><![CDATA[
    Record date: 2071-03-10
    ...note...
    ****************************************************************************************************
    Record date: 2072-01-15
    ...note...
    ]]></TEXT>
    <TAGS>
    <ABDOMINAL met="met" />
    ...one element per criterion...
    </TAGS>
    </PatientMatching>

Every parse goes through :mod:`defusedxml` (no entity expansion, no external
references). The patient text is the ``<TEXT>`` content exactly as the XML parser
returns it (CDATA unwrapped; the parser turns ``\\r\\n`` into ``\\n``), and every
offset points into it.

Record rules (documented fallbacks, no warnings):

* A *separator* is a line that holds only asterisks, at least 20 of them (the n2c2
  files use 100), optionally with spaces or tabs around them.
* A *record* is the text between two separators (or the start/end of the text),
  with leading and trailing whitespace left out of its ``[start, end)`` offsets.
  A stretch that is empty or only whitespace is not a record (it is skipped).
* Its date comes from the first line of the record that starts with
  ``Record date:`` (any case) followed by ``YYYY-MM-DD`` (also accepted:
  ``M/D/YYYY``). If there is no such line, or the date does not exist (e.g.
  ``2071-02-30``), the record's date is ``None``. Dates are de-identification
  shifted (2060s-2090s): they are only compared with each other, never with today.

References
----------
.. [1] Stubbs A, Filannino M, Soysal E, Henry S, Uzuner Ö. Cohort selection for
   clinical trials: n2c2 2018 shared task track 1. JAMIA 2019;26(11):1163-1171,
   section "Data" (file layout, records, de-identified dates).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Literal
from xml.etree.ElementTree import Element

from clinex.cohort.criteria_names import canonical_order
from clinex.cohort.formats.records import SEPARATOR, parse_record_date, split_records
from clinex.cohort.types import MET, NOT_MET, Decision, Patient
from clinex.errors import ClinexError, EncodingError, FormatError, InputError, SchemaError
from clinex.io.textfile import check_nul, utf8_error
from clinex.io.xmlfile import XMLFault, parse_xml

__all__ = [
    "read_patient",
    "parse_patient_xml",
    "write_patient",
    "read_patients",
    "patient_to_xml",
    "split_records",
    "parse_record_date",
    "SEPARATOR",
    "MAX_BYTES",
]

#: Default size limit of one patient file, in bytes (64 MiB).
MAX_BYTES = 64 * 2**20

_XML_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9._-]*")
_BAD_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ENCODING_DECL = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


# --------------------------------------------------------------------------- reading


def _line_of(text: str, needle: str, start: int = 0) -> int | None:
    i = text.find(needle, start)
    return text.count("\n", 0, i) + 1 if i >= 0 else None


def _parse_root(source: str | bytes, path: str | Path | None) -> Element:
    try:
        return parse_xml(source)
    except XMLFault as fault:
        if fault.kind == "malformed":
            msg = re.sub(r":\s*line \d+, column \d+$", "", fault.message)
            col = f", column {fault.column + 1}" if fault.line is not None else ""
            raise FormatError(f"malformed XML: {msg}{col}", path=path, line=fault.line) from None
        if fault.kind == "unknown-encoding":
            raise EncodingError(f"XML declares an unknown encoding ({fault.detail})", path=path, line=1) from None
        if fault.kind == "unsafe":
            raise FormatError(
                f"forbidden XML construct ({fault.detail}); n2c2 files need no "
                "DTD, entity declarations or external references",
                path=path,
            ) from None
        raise EncodingError("not UTF-8 text", path=path) from None


def parse_patient_xml(
    text: str | bytes,
    *,
    path: str | Path | None = None,
    patient_id: str | None = None,
) -> Patient:
    """Parse the content of one n2c2 Track 1 XML file.

    Parameters
    ----------
    text : str or bytes
        The XML document. Bytes are decoded as the XML declaration says (UTF-8 by
        default).
    path : str or Path, optional
        Where it came from; used in error messages, ``Patient.source`` and, without
        ``patient_id``, the id (the file stem).
    patient_id : str, optional
        The patient id; default the stem of ``path``, else ``"patient"``.

    Returns
    -------
    Patient
        ``text`` = the ``<TEXT>`` content, ``records`` from :func:`split_records`,
        ``labels`` from ``<TAGS>`` (empty when the file has no ``<TAGS>``).
        Tag names are upper-cased and ``met`` values lower-cased and stripped, as
        the official scorer does.

    Raises
    ------
    FormatError
        Malformed XML (with line), a root other than ``<PatientMatching>``, no
        ``<TEXT>`` element, markup inside ``<TEXT>``, a tag without a ``met``
        attribute, a ``met`` value other than ``met`` / ``not met``, or the same
        criterion twice.

    References
    ----------
    .. [1] n2c2 2018 Track 1 evaluation script ``track1_eval.py`` (tag and value
       normalisation).
    """
    root = _parse_root(text, path)
    raw = text if isinstance(text, str) else text.decode("utf-8", errors="replace")
    if root.tag != "PatientMatching":
        raise FormatError(
            f"root element is <{root.tag}>, expected <PatientMatching>", path=path, line=1, field="root"
        )
    text_el = root.find("TEXT")
    if text_el is None:
        raise FormatError("no <TEXT> element", path=path, field="TEXT")
    if len(text_el):
        raise FormatError(
            f"<TEXT> holds markup (<{text_el[0].tag}>); wrap the notes in CDATA",
            path=path,
            line=_line_of(raw, f"<{text_el[0].tag}", raw.find("<TEXT")),
            field="TEXT",
        )
    body = text_el.text or ""
    labels: dict[str, str] = {}
    tags_el = root.find("TAGS")
    if tags_el is not None:
        cursor = raw.find("<TAGS")
        for tag in tags_el:
            name = str(tag.tag).strip().upper()
            at = raw.find(f"<{tag.tag}", cursor)
            cursor = at + 1 if at >= 0 else cursor
            line = raw.count("\n", 0, at) + 1 if at >= 0 else None
            if "met" not in tag.attrib:
                raise FormatError(
                    f"<{tag.tag}> has no 'met' attribute", path=path, line=line, field=f"TAGS/{name}"
                )
            value = tag.attrib["met"].strip().lower()
            if value not in (MET, NOT_MET):
                raise FormatError(
                    f"met={tag.attrib['met']!r} is not one of 'met', 'not met'",
                    path=path,
                    line=line,
                    field=f"TAGS/{name}",
                )
            if name in labels:
                raise FormatError(
                    "criterion appears twice in <TAGS>", path=path, line=line, field=f"TAGS/{name}"
                )
            labels[name] = value
    if patient_id is None:
        patient_id = Path(path).stem if path is not None else "patient"
    return Patient(
        id=patient_id,
        text=body,
        records=split_records(body),
        labels=labels,  # type: ignore[arg-type]
        source=str(path) if path is not None else None,
    )


def read_patient(path: str | Path, *, max_bytes: int = MAX_BYTES) -> Patient:
    """Read one n2c2 Track 1 XML file.

    Parameters
    ----------
    path : str or Path
        The ``NNN.xml`` file; the patient id is its stem (``"001"``).
    max_bytes : int, default MAX_BYTES (64 MiB)
        Files larger than this are refused (a patient is normally 5-30 kB).

    Returns
    -------
    Patient
        See :func:`parse_patient_xml`.

    Raises
    ------
    InputError
        The file does not exist or cannot be read.
    EncodingError
        The file is binary (NUL bytes) or not valid UTF-8 while declaring no other
        encoding.
    FormatError
        Empty (0 bytes), too large, or not a valid n2c2 file (see :func:`parse_patient_xml`).

    Examples
    --------
    >>> p = read_patient("dev/001.xml")  # doctest: +SKIP
    >>> p.records[0].date, p.labels["HBA1C"]  # doctest: +SKIP
    (datetime.date(2071, 3, 10), 'met')
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise InputError("not a file", path=path)
        if size > max_bytes:
            raise FormatError(
                f"file is {size} bytes, above the limit of {max_bytes} bytes "
                "(pass max_bytes to read larger patients)",
                path=path,
            )
        if size == 0:  # the message RoB and PV give for an empty file (fresh-user check, stop 19)
            raise FormatError("empty file (0 bytes), expected n2c2 XML", path=path)
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror})", path=path) from None
    check_nul(data, path=path, expected="XML text")
    try:
        source: str | bytes = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        decl = _ENCODING_DECL.match(data)
        if decl is None or decl.group(1).lower().replace(b"_", b"-") in (b"utf-8", b"utf8"):
            raise utf8_error(data, exc, path=path) from None
        source = data  # another declared encoding: the XML parser decodes it
    if isinstance(source, str) and source.startswith("\ufeff"):
        source = source[1:]
    return parse_patient_xml(source, path=path)


def _expand(item: str | Path) -> list[tuple[str, Path]]:
    """(kind, path) of the patients under one input: an XML file, a note folder
    (``*.txt`` files and no ``*.xml``), or a folder of XML files and note folders."""
    p = Path(item)
    if p.is_dir():
        out: list[tuple[str, Path]] = [("xml", f) for f in sorted(p.glob("*.xml")) if f.is_file()]
        if not out and any(f.is_file() for f in p.glob("*.txt")):
            return [("notes", p)]  # the folder is itself one patient's notes
        out += [
            ("notes", d)
            for d in sorted(p.iterdir())
            if d.is_dir() and any(f.is_file() for f in d.glob("*.txt"))
        ]
        return out
    return [("xml", p)]


def read_patients(
    paths_or_dirs: str | Path | Iterable[str | Path],
    errors: Literal["report", "raise", "ignore"] = "report",
    *,
    error_log: list[ClinexError] | None = None,
    max_bytes: int = MAX_BYTES,
) -> Iterator[Patient]:
    """Read many patients, going on past bad ones.

    Parameters
    ----------
    paths_or_dirs : path or iterable of paths
        XML files, and folders. A folder contributes its ``*.xml`` files (sorted by
        name) and each sub-folder holding ``*.txt`` notes as one patient (see
        :func:`clinex.cohort.formats.notes_folder.read_notes_folder`); a folder holding
        ``*.txt`` notes and no ``*.xml`` is itself one patient. A folder with
        neither is a bad input (``no *.xml files or note folders``).
    errors : {"report", "raise", "ignore"}, default "report"
        What a bad patient does: ``"report"`` prints ``[CODE] file: message`` to
        stderr and skips it; ``"raise"`` raises; ``"ignore"`` skips it silently.
        Whatever the mode, the error is appended to ``error_log`` when given.
    error_log : list, optional
        Receives one :class:`~clinex.errors.ClinexError` per skipped patient.
    max_bytes : int, default MAX_BYTES
        Size limit per XML file (see :func:`read_patient`).

    Yields
    ------
    Patient
        In the order given, folders expanded in name order.

    Raises
    ------
    ClinexError
        Only with ``errors="raise"``.
    ValueError
        Unknown ``errors`` mode.
    """
    if errors not in ("report", "raise", "ignore"):
        raise ValueError(f"errors must be 'report', 'raise' or 'ignore', not {errors!r}")
    if isinstance(paths_or_dirs, (str, Path)):
        paths_or_dirs = [paths_or_dirs]
    from clinex.cohort.formats.notes_folder import read_notes_folder

    for item in paths_or_dirs:
        found = _expand(item)
        if not found:  # an empty folder is a bad input, named like any other
            exc = InputError("no *.xml files or note folders", path=item)
            if error_log is not None:
                error_log.append(exc)
            if errors == "raise":
                raise exc
            if errors == "report":
                print(str(exc), file=sys.stderr)
        for kind, p in found:
            try:
                yield read_patient(p, max_bytes=max_bytes) if kind == "xml" else read_notes_folder(p)
            except ClinexError as exc:
                if error_log is not None:
                    error_log.append(exc)
                if errors == "raise":
                    raise
                if errors == "report":
                    print(str(exc), file=sys.stderr)


# --------------------------------------------------------------------------- writing


def _cdata(text: str) -> str:
    return "<![CDATA[" + text.replace("]]>", "]]]]><![CDATA[>") + "]]>"


def patient_to_xml(patient: Patient, decisions: Mapping[str, Decision] | None = None) -> str:
    """Render a patient in the n2c2 Track 1 layout.

    Parameters
    ----------
    patient : Patient
        Its ``text`` becomes the ``<TEXT>`` CDATA unchanged (a ``]]>`` inside is
        split across two CDATA sections, which a parser joins back).
    decisions : mapping of criterion name to Decision, optional
        When given, ``<TAGS>`` holds these labels; otherwise ``patient.labels``.
        Tags are written in canonical criterion order (unknown names last, sorted).

    Returns
    -------
    str
        The XML document (UTF-8 declaration, ``\\n`` line ends).

    Raises
    ------
    InputError
        The text holds characters XML 1.0 cannot carry (e.g. control characters),
        or a decision's ``criterion`` differs from its key.
    SchemaError
        A criterion name is not a valid XML element name.
    """
    bad = _BAD_XML_CHAR.search(patient.text)
    if bad:
        raise InputError(
            f"patient {patient.id!r}: character U+{ord(bad.group()):04X} at offset "
            f"{bad.start()} cannot be written to XML",
            field="TEXT",
        )
    if decisions is not None:
        labels: dict[str, str] = {}
        for key, dec in decisions.items():
            if dec.criterion != key:
                raise InputError(
                    f"patient {patient.id!r}: decision under key {key!r} is for {dec.criterion!r}",
                    field="decisions",
                )
            labels[key] = dec.label
    else:
        labels = dict(patient.labels)
    lines = [
        '<?xml version="1.0" encoding="UTF-8" ?>',
        "<PatientMatching>",
        "<TEXT>" + _cdata(patient.text) + "</TEXT>",
        "<TAGS>",
    ]
    for name in canonical_order(labels):
        if not _XML_NAME.fullmatch(name):
            raise SchemaError(f"criterion name {name!r} is not a valid XML element name", field="TAGS")
        lines.append(f'<{name} met="{labels[name]}" />')
    lines += ["</TAGS>", "</PatientMatching>", ""]
    return "\n".join(lines)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def write_patient(
    patient: Patient,
    path: str | Path,
    decisions: Mapping[str, Decision] | None = None,
) -> Path:
    """Write a patient as an n2c2 Track 1 XML file.

    Parameters
    ----------
    patient : Patient
        The patient; ``patient.source`` is the file it was read from.
    path : str or Path
        Output file; parent folders are created. The file is written to a temporary
        file first and then moved into place.
    decisions : mapping of criterion name to Decision, optional
        Predicted labels for ``<TAGS>``; default the patient's gold labels.

    Returns
    -------
    Path
        The written file.

    Raises
    ------
    InputError
        ``path`` is the patient's own input file (never overwritten), or see
        :func:`patient_to_xml`.
    """
    path = Path(path)
    if patient.source is not None and _same_file(path, Path(patient.source)):
        raise InputError("refusing to overwrite the input file; choose another output", path=path)
    xml = patient_to_xml(patient, decisions)
    from clinex.io.atomic import write_atomic

    return write_atomic(path, xml, force=True, newline="")
