"""ADE corpus v2 sentences without an adverse drug effect (``ADE-NEG.txt``).

One sentence a line, ``PMID NEG sentence`` (Gurulingappa et al., "Development of a
benchmark corpus to support the automatic extraction of drug-related adverse effects
from medical case reports", J Biomed Inform 45(5), 2012; file layout of the
``ADE-NEG.txt`` distribution). A line without the ``PMID NEG`` prefix is read as a
plain sentence (so that a user's own file of negative sentences, one a line, works
too); its id is then ``line<N>``. Blank lines are skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from clinex.errors import InputError
from clinex.io.textfile import read_text, require_file

__all__ = ["NegativeSentence", "read_ade_negatives"]

_LINE = re.compile(r"(\d+) NEG (.*\S)\s*$")


class NegativeSentence(BaseModel):
    """One sentence that holds no adverse drug effect.

    Attributes
    ----------
    pmid : str
        The PubMed id of its abstract (``line<N>`` for a plain line).
    text : str
        The sentence.
    line : int
        1-based line number in the file.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    pmid: str
    text: str
    line: int


def read_ade_negatives(path: str | Path) -> list[NegativeSentence]:
    """Read an ``ADE-NEG.txt``-style file.

    Parameters
    ----------
    path : str or Path
        UTF-8 text, one sentence a line (``PMID NEG sentence`` or plain).

    Returns
    -------
    list of NegativeSentence
        In file order; blank lines skipped.

    Raises
    ------
    InputError
        If the file is missing, is a folder, or holds no sentence.
    EncodingError
        If it is not UTF-8 text (names the line).
    """
    p = require_file(path)
    out: list[NegativeSentence] = []
    for n, raw in enumerate(read_text(p).splitlines(), 1):
        if not raw.strip():
            continue
        m = _LINE.match(raw)
        if m:
            out.append(NegativeSentence(pmid=m.group(1), text=m.group(2), line=n))
        else:
            out.append(NegativeSentence(pmid=f"line{n}", text=raw.strip(), line=n))
    if not out:
        raise InputError("holds no sentence (one negative sentence a line expected)", path=p)
    return out
