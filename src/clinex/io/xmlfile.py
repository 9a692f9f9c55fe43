"""The one safe XML parse of clinex's document readers (JATS, CONSORT-TM, tagtog, n2c2).

Every reader that builds a tree from a whole XML document calls :func:`parse_xml`
(defusedxml: no entity expansion, no external DTD or entity fetch). The parse and the
mapping of the parser's failures live here; a reader that words its errors its own way
catches :class:`XMLFault` and formats it, the others call :func:`parse_xml_file`, which
raises clinex's own errors. The MEDLINE reader streams (``iterparse``) and is the one
other place defusedxml is called (:mod:`clinex.io.medline`).
``tests/test_shared_pieces.py`` fails when a reader parses XML another way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from clinex.errors import EncodingError, FormatError

__all__ = ["XMLFault", "parse_xml", "parse_xml_file"]


@dataclass
class XMLFault(Exception):
    """Why :func:`parse_xml` could not parse a document.

    Attributes
    ----------
    kind : {"malformed", "unsafe", "encoding", "unknown-encoding"}
        Not well-formed; refused by defusedxml (entity declarations, external
        references); not decodable in its declared encoding; an encoding Python does
        not know.
    detail : str
        The parser's message (``malformed``), the defusedxml exception's class name
        (``unsafe``) or the lookup error (``unknown-encoding``).
    line, column : int or None
        1-based line and 0-based column the parser names (``malformed`` only).
    message : str
        ``str()`` of the parser's exception.
    """

    kind: Literal["malformed", "unsafe", "encoding", "unknown-encoding"]
    detail: str
    line: int | None = None
    column: int | None = None
    message: str = ""

    def __str__(self) -> str:
        return self.message or self.detail


def parse_xml(source: Path | str | bytes) -> Any:
    """Parse an XML document with defusedxml and return its root element.

    Parameters
    ----------
    source : Path, str or bytes
        A file (:class:`~pathlib.Path`) or the document itself (``str`` or ``bytes``).

    Returns
    -------
    xml.etree.ElementTree.Element
        The root element.

    Raises
    ------
    XMLFault
        The document could not be parsed; ``kind`` says why.

    Examples
    --------
    >>> parse_xml("<a><b>x</b></a>").find("b").text
    'x'
    >>> try:
    ...     parse_xml('<!DOCTYPE a [<!ENTITY e "x">]><a>&e;</a>')
    ... except XMLFault as fault:
    ...     print(fault.kind, fault.detail)
    unsafe EntitiesForbidden
    """
    from xml.etree.ElementTree import ParseError

    from defusedxml import ElementTree
    from defusedxml.common import DefusedXmlException

    try:
        if isinstance(source, Path):
            return ElementTree.parse(str(source)).getroot()
        return ElementTree.fromstring(source)
    except ParseError as exc:
        line, column = exc.position if getattr(exc, "position", None) else (None, None)
        raise XMLFault("malformed", getattr(exc, "msg", str(exc)), line, column, str(exc)) from None
    except DefusedXmlException as exc:
        raise XMLFault("unsafe", type(exc).__name__, message=str(exc)) from None
    except UnicodeDecodeError as exc:
        raise XMLFault("encoding", str(exc), message=str(exc)) from None
    except LookupError as exc:  # <?xml encoding="..."?> names no codec Python knows
        raise XMLFault("unknown-encoding", str(exc), line=1, message=str(exc)) from None


def parse_xml_file(path: Path) -> Any:
    """Parse an XML file with defusedxml and return its root element.

    Parameters
    ----------
    path : Path
        An existing file (the caller checks existence and emptiness).

    Returns
    -------
    xml.etree.ElementTree.Element
        The root element.

    Raises
    ------
    FormatError
        Not well-formed XML (the line named when the parser gives it), or unsafe XML
        that defusedxml refuses (entity declarations, external references).
    EncodingError
        Not decodable in its declared encoding, or an encoding Python does not know.
    """
    try:
        return parse_xml(Path(path))
    except XMLFault as fault:
        if fault.kind == "malformed":
            raise FormatError(f"XML is not well formed ({fault.message})", path=path, line=fault.line) from None
        if fault.kind == "unsafe":
            raise FormatError(f"refused unsafe XML ({fault.detail})", path=path) from None
        if fault.kind == "encoding":
            raise EncodingError("XML not in its declared encoding", path=path) from None
        raise EncodingError(f"XML declares an unknown encoding ({fault.detail})", path=path, line=1) from None
