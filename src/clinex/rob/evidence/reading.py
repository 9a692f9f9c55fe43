"""The sentences a reviewer reads for each signalling question, beyond the deciding ones.

RoB 2 answers rest on a few statements, but a reviewer checks them against the report's
whole account of the matter: the statistical-methods paragraph for 2.6 and 3.2, the
participant flow for 3.1-3.4, every blinding statement for 2.1, 2.2 and 4.3. The reading
list (``clinex/resources/rob/reading.yaml``, ``clinex.rob.reading.v1``) names, per topic
(the CONSORT 2010 items RoB 2 draws on: Schulz et al., BMJ 2010;340:c332; item -> SQ map of
RoBuster, Dhrangadhariya et al., Database 2023), the sections to read, the SQs it serves and
a pattern. :func:`reading_evidence` lists those sentences; the rules model cites them after
its deciding evidence with a low score, so the report shows them and the CONSORT-TM bench
(``bench/rob_consort.py``) measures them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Protocol

from clinex.errors import SchemaError
from clinex.io.textfile import parse_yaml

__all__ = ["ReadingTopic", "ReadingList", "load_reading_list", "reading_evidence"]


class _Sentence(Protocol):
    index: int
    text: str
    section: str


@dataclass(frozen=True)
class ReadingTopic:
    """One topic of the reading list.

    Attributes
    ----------
    name : str
        E.g. ``"flow"`` (provenance ``clinex.rob.reading.v1:<sq>/<name>``).
    sections : tuple of str
        ``clinex.rob.sections`` labels the topic is read in.
    sqs : tuple of str
        Signalling questions it is cited for.
    pattern : re.Pattern
        Matched case-insensitively on the sentence text.
    """

    name: str
    sections: tuple[str, ...]
    sqs: tuple[str, ...]
    pattern: re.Pattern[str]


@dataclass(frozen=True)
class ReadingList:
    """The packaged reading list.

    Attributes
    ----------
    name : str
    score : float
        Evidence score of a reading-list citation, in [0, 1].
    max_per_sq : int
        At most this many reading-list sentences per SQ.
    exclude : re.Pattern
        A sentence matching it is never listed (ethics approval, funding, other studies).
    topics : tuple of ReadingTopic
    """

    name: str
    score: float
    max_per_sq: int
    exclude: re.Pattern[str]
    topics: tuple[ReadingTopic, ...]


@lru_cache(maxsize=4)
def load_reading_list(name: str = "reading.yaml") -> ReadingList:
    """Read ``clinex/resources/rob/<name>`` once per process.

    Raises
    ------
    SchemaError
        A missing key or a bad pattern (the message names the topic).
    """
    where = f"clinex/resources/rob/{name}"
    raw = parse_yaml(resources.files("clinex.resources").joinpath("rob", name).read_text("utf-8"), path=where)
    try:
        topics = tuple(
            ReadingTopic(key, tuple(t["sections"]), tuple(str(q) for q in t["sqs"]), re.compile(t["pattern"], re.I))
            for key, t in raw["topics"].items()
        )
        return ReadingList(raw["name"], float(raw["score"]), int(raw["max_per_sq"]),
                           re.compile(raw["exclude"], re.I), topics)
    except (KeyError, TypeError, re.error) as exc:
        raise SchemaError(f"{where}: bad reading list ({exc})") from exc


def reading_evidence(sentences: list[_Sentence], *, reading: ReadingList | None = None,
                     allowed: frozenset[int] | None = None) -> dict[str, list[tuple[_Sentence, str]]]:
    """The reading-list sentences per SQ, in reading order.

    Parameters
    ----------
    sentences : list of Sentence
        The report's sentences (``index``, ``text``, ``section``).
    reading : ReadingList, optional
        Default: :func:`load_reading_list`.
    allowed : frozenset of int, optional
        Indices of the sentences that may be listed (statements about this trial); None: all.

    Returns
    -------
    dict of str to list of (Sentence, str)
        SQ -> (sentence, topic name), at most ``max_per_sq`` per SQ before the caller drops
        sentences it already cites.

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> sents = [S(index=0, text="Randomisation used a computer-generated list in blocks of four.", section="methods"),
    ...          S(index=1, text="The study was approved by the ethics committee.", section="methods")]
    >>> [(s.index, t) for s, t in reading_evidence(sents)["1.1"]]
    [(0, 'sequence')]
    """
    rl = reading or load_reading_list()
    out: dict[str, list[tuple[_Sentence, str]]] = {}
    for s in sentences:
        if (allowed is not None and s.index not in allowed) or rl.exclude.search(s.text):
            continue
        for topic in rl.topics:
            if s.section in topic.sections and topic.pattern.search(s.text):
                for sq in topic.sqs:
                    out.setdefault(sq, []).append((s, topic.name))
    return out
