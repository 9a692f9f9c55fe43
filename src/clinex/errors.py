"""The clinex error catalogue.

Every error clinex raises on purpose derives from :class:`ClinexError` and carries a
stable code (``[CLX001]``) so that users and tests can refer to it. Messages name the
file, line (1-based) and field where the problem is, never the text of a clinical note.

Tree::

    ClinexError                      CLX000
    ├── InputError                   CLX001  bad user input (file, line, field)
    │   ├── FormatError              CLX002  a file does not follow its format
    │   └── EncodingError            CLX003  not UTF-8 text / binary file
    ├── OffsetError                  CLX004  offsets outside the text or text mismatch
    ├── SchemaError                  CLX005  unknown label, role, criterion or SQ
    ├── ModelError                   CLX006  model missing, unfitted or incompatible
    ├── EvaluationError              CLX007  gold and prediction do not line up
    ├── DataError                    CLX008  corpus download / checksum problems
    └── LLMError                     CLX009  an LLM server call failed (server, document named)

The CLI catches :class:`ClinexError` at the boundary, prints ``[CODE] message`` to
stderr and exits with status 2.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "report_to_stderr",
    "ClinexError",
    "InputError",
    "FormatError",
    "EncodingError",
    "OffsetError",
    "SchemaError",
    "ModelError",
    "EvaluationError",
    "DataError",
    "LLMError",
]


class ClinexError(Exception):
    """Base class of all clinex errors.

    Parameters
    ----------
    message : str
        What went wrong, without note text.
    path : str or Path, optional
        The file the problem is in.
    line : int, optional
        1-based line number (or record number for formats without lines).
    field : str, optional
        The field or key that is wrong.
    """

    code = "CLX000"

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        if self.field is not None:
            where += f"field '{self.field}': "
        return f"[{self.code}] {where}{self.message}"


class InputError(ClinexError):
    """Bad user input: a file, argument or record that cannot be used."""

    code = "CLX001"


class FormatError(InputError):
    """A file does not follow the format it claims (JSON line, brat, XML, ...)."""

    code = "CLX002"


class EncodingError(InputError):
    """A file is not UTF-8 text (binary, or another encoding)."""

    code = "CLX003"


class OffsetError(ClinexError):
    """Character offsets fall outside the text, or the span text does not match."""

    code = "CLX004"


class SchemaError(ClinexError):
    """An unknown label, role, criterion or signalling question."""

    code = "CLX005"


class ModelError(ClinexError):
    """A model is missing, not fitted, or was saved by an incompatible version."""

    code = "CLX006"


class EvaluationError(ClinexError):
    """Gold and predicted files do not line up (missing or extra documents)."""

    code = "CLX007"


class DataError(ClinexError):
    """A corpus could not be found, downloaded or verified."""

    code = "CLX008"


class LLMError(ClinexError):
    """An LLM server could not be reached or gave no usable answer (names server and document)."""

    code = "CLX009"


def report_to_stderr(exc: ClinexError) -> None:
    """Print ``[CODE] file:line: message`` on stderr: the default way a reader in
    ``errors="skip"`` mode reports a bad record before going on with the next."""
    import sys

    print(str(exc), file=sys.stderr)
