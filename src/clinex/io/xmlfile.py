"""The one safe parse of an XML file for clinex's document readers (JATS, CONSORT-TM)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clinex.errors import EncodingError, FormatError

__all__ = ["parse_xml_file"]


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
    from xml.etree.ElementTree import ParseError

    from defusedxml import ElementTree
    from defusedxml.common import DefusedXmlException

    try:
        return ElementTree.parse(str(path)).getroot()
    except ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else None
        raise FormatError(f"XML is not well formed ({exc})", path=path, line=line) from None
    except DefusedXmlException as exc:
        raise FormatError(f"refused unsafe XML ({type(exc).__name__})", path=path) from None
    except UnicodeDecodeError:
        raise EncodingError("XML not in its declared encoding", path=path) from None
    except LookupError as exc:  # <?xml encoding="..."?> names no codec Python knows
        raise EncodingError(f"XML declares an unknown encoding ({exc})", path=path, line=1) from None
