"""Keep the texts that mention one of some terms: the ``--drug NAME|FILE`` screen of PV inputs.

:class:`TermScreen` matches each term as a whole word (or words), case-insensitively,
with any white space between a term's words ("valproic acid" matches "Valproic
acid"). A caller that knows synonyms passes ``lookup``: a function from a text to the
keys (e.g. canonical drug names) of the terms it finds in it; a text then also matches
when it holds a term whose key one of the screen's terms has (``lookup("Tylenol")`` and
``lookup("paracetamol")`` both give ``{"acetaminophen"}``). The screen itself knows no
task: :func:`clinex.pv.cli.drug_screen` passes the PV drug gazetteer.

:func:`read_terms` turns option values into terms: a value naming an existing file is read
as one term a line (UTF-8; blank lines and lines starting with ``#`` are skipped), any
other value is a term.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from clinex.errors import InputError

__all__ = ["TermScreen", "read_terms"]


def read_terms(values: Iterable[str], *, option: str = "--drug") -> list[str]:
    """The terms of ``values``: each a term, or a file of one term a line.

    Parameters
    ----------
    values : iterable of str
        Option values, in order.
    option : str, default "--drug"
        Names the option in messages.

    Returns
    -------
    list of str
        The terms, white space trimmed, first occurrence kept (case-insensitive).

    Raises
    ------
    InputError
        A file that holds no term, or no term at all.
    EncodingError
        A file that is not UTF-8 text (names the file and line).
    """
    from clinex.io.textfile import read_text

    out: dict[str, str] = {}
    for value in values:
        if Path(value).is_file():
            names = [ln.strip() for ln in read_text(value).splitlines()]
            names = [n for n in names if n and not n.startswith("#")]
            if not names:
                raise InputError(f"{option} file holds no name (one a line; '#' starts a comment)", path=value)
        else:
            names = [" ".join(value.split())]
        for name in names:
            if name:
                out.setdefault(name.lower(), name)
    if not out:
        raise InputError(f"{option} gives no name", field=option)
    return list(out.values())


class TermScreen:
    """Which texts mention one of ``terms``.

    Parameters
    ----------
    terms : sequence of str
        Words or phrases; matched whole (not inside a longer word), case-insensitively.
    lookup : callable (str) -> iterable of str, optional
        Keys of the terms found in a text (a gazetteer's canonical names). A text whose
        keys meet the keys of ``terms`` matches too.
    term_keys : callable (str) -> iterable of str, optional
        Keys of one of ``terms`` (default ``lookup``): e.g. the exact entry of a name,
        so that a word inside a phrase does not add a key of its own.

    Attributes
    ----------
    terms : tuple of str
    keys : frozenset of str
        The keys of ``terms`` (empty without ``lookup``).
    unknown : tuple of str
        The terms ``lookup`` gives no key (matched as written only).

    Examples
    --------
    >>> screen = TermScreen(["valproic acid"])
    >>> screen.match("Valproic  acid-induced hepatotoxicity."), screen.match("Valproate.")
    (True, False)
    """

    def __init__(
        self,
        terms: Sequence[str],
        *,
        lookup: Callable[[str], Iterable[str]] | None = None,
        term_keys: Callable[[str], Iterable[str]] | None = None,
    ) -> None:
        self.terms = tuple(terms)
        if not self.terms:
            raise InputError("no term to screen by", field="terms")
        words = sorted(self.terms, key=len, reverse=True)
        alternatives = "|".join(r"\s+".join(re.escape(w) for w in t.split()) for t in words)
        self._pattern = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)
        self._lookup = lookup
        keys_of = term_keys or lookup
        found = {t: frozenset(keys_of(t)) for t in self.terms} if keys_of is not None and lookup is not None else {}
        self.keys = frozenset().union(*found.values()) if found else frozenset()
        self.unknown = tuple(t for t in self.terms if found and not found[t])

    def match(self, text: str) -> bool:
        """True when ``text`` mentions one of the terms (as written, or through ``lookup``)."""
        if self._pattern.search(text):
            return True
        return bool(self.keys) and self._lookup is not None and not self.keys.isdisjoint(self._lookup(text))
