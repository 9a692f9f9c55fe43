"""The participant flow of one trial: :func:`flow` combines the number statements of a
document (:func:`~clinex.rob.evidence.reasoning.counts.find_counts`) into one
:class:`Flow` (randomised total and per arm, outcome data and analysed numbers), each
number with the sentences it came from. Both names are re-exported by
:mod:`~clinex.rob.evidence.reasoning.counts`.

References
----------
Schulz KF, Altman DG, Moher D. CONSORT 2010 statement. BMJ 2010;340:c332 (item 13a).
Dhrangadhariya A et al. RoBuster. Database 2023 (SQ 3.1 placard: >= 95 %).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from clinex.rob.evidence.reasoning.count_phrases import Count

__all__ = ["Flow", "flow"]


@dataclass
class Flow:
    """The participant flow of one trial, as far as the text gives it.

    Attributes
    ----------
    randomised : int or None
    randomised_arms : tuple of int
    outcome : int or None
        Participants with outcome data (SQ 3.1).
    outcome_arms : tuple of int
    analysed : int or None
        Participants in the analysis (SQ 2.6/2.7); falls back on ``outcome``.
    evidence : list of (int, int)
        Offsets of the sentences the outcome numbers came from.
    analysis_evidence : list of (int, int)
        Offsets of the sentences the analysis numbers came from.
    """

    randomised: int | None = None
    randomised_arms: tuple[int, ...] = ()
    outcome: int | None = None
    outcome_arms: tuple[int, ...] = ()
    analysed: int | None = None
    evidence: list[tuple[int, int]] = field(default_factory=list)
    analysis_evidence: list[tuple[int, int]] = field(default_factory=list)

    outcome_percents: tuple[float, ...] = ()
    outcome_from_analysis: bool = False

    @property
    def share(self) -> float | None:
        """Participants with outcome data / randomised; without a randomised number the
        mean of the percentages the report gives with the outcome numbers; else None."""
        if (not self.randomised or self.outcome is None) and self.outcome_percents:
            return sum(self.outcome_percents) / len(self.outcome_percents) / 100
        if not self.randomised or self.outcome is None or self.outcome > self.randomised:
            return None
        return self.outcome / self.randomised

    @property
    def analysed_share(self) -> float | None:
        """Participants analysed / randomised (outcome numbers when no analysis number)."""
        n = self.analysed if self.analysed is not None else self.outcome
        if not self.randomised or n is None or n > self.randomised:
            return None
        return n / self.randomised

    def missing_shares(self) -> tuple[float, ...]:
        """Per-arm share of randomised participants without outcome data (empty if unknown)."""
        if (len(self.outcome_arms) >= 2 and len(self.randomised_arms) == len(self.outcome_arms)
                and all(r > 0 and a <= r for a, r in zip(self.outcome_arms, self.randomised_arms))):
            return tuple(1 - a / r for a, r in zip(self.outcome_arms, self.randomised_arms))
        return ()


def _pick(f: Flow, cands: list[Count]) -> Count | None:
    """The statement about the most participants that fits the randomised number
    (smaller numbers in the flow are subgroups: reasons, exclusions, events)."""
    fits = []
    for c in cands:
        if c.of_arm and (f.randomised is None or sum(c.of_arm) == f.randomised or max(c.of_arm) == f.randomised):
            fits.append(c)
        elif c.total is not None and (f.randomised is None or c.total <= f.randomised) and not c.of_arm:
            fits.append(c)
    return max(fits, key=lambda c: (c.total or 0, c.start)) if fits else None


def _set_randomised(f: Flow, rand: list[Count]) -> None:
    """The randomised total and arms: the first ``randomised`` statement, its arms from a
    later statement of the same total when it gives none ("(n = 540) were randomly
    assigned" ... "270 ... allocated to each group")."""
    if not rand:
        return
    pick = rand[0]
    f.randomised, f.randomised_arms = pick.total, pick.per_arm
    if not pick.per_arm:  # "(n = 540) were randomly assigned" ... "270 ... allocated to each group"
        f.randomised_arms = next((c.per_arm for c in rand[1:] if c.total == pick.total and c.per_arm), ())


def _outcome_statement(f: Flow, outc: list[Count], anal: list[Count], lost: list[Count]) -> Count | None:
    """The statement the outcome number comes from: the best ``outcome`` one, else the best
    ``analysis`` one (marked :attr:`Flow.outcome_from_analysis`) unless losses are counted
    and it has no per-arm denominators ("385 analysed per protocol")."""
    c = _pick(f, outc)
    if c is None:
        a = _pick(f, anal)
        # an analysed number stands for the outcome data unless losses are counted and the
        # analysed number has no per-arm denominators ("385 analysed per protocol")
        if a is not None and (not (f.randomised is not None and lost) or a.of_arm):
            c = a
            f.outcome_from_analysis = True
    return c


def _outcome_from(f: Flow, c: Count, rand: list[Count]) -> None:
    """Outcome numbers from statement ``c``; its "a of b" denominators give the randomised
    numbers the report leaves out."""
    f.outcome = sum(c.per_arm) if c.per_arm and c.of_arm else c.total
    f.outcome_arms = c.per_arm
    f.outcome_percents = c.percents
    if c.of_arm and (f.randomised is None or not f.randomised_arms):
        if len(c.of_arm) >= 2:
            f.randomised_arms = c.of_arm
        if f.randomised is None:
            f.randomised = sum(c.of_arm) if len(c.of_arm) >= 2 else c.of_arm[0]
    if rand:
        f.evidence.append((rand[0].start, rand[0].end))
    f.evidence.append((c.start, c.end))


def _outcome_from_losses(f: Flow, rand: list[Count], lost: list[Count]) -> None:
    """Outcome numbers as the randomised ones minus every ``lost`` number (per arm when
    every loss statement gives one number per randomised arm)."""
    n_lost = sum(x.total or 0 for x in lost)
    if n_lost > f.randomised:  # type: ignore[operator]
        return
    f.outcome = f.randomised - n_lost  # type: ignore[operator]
    f.evidence.append((rand[0].start, rand[0].end))
    f.evidence.extend((x.start, x.end) for x in lost)
    if f.randomised_arms and all(len(x.per_arm) == len(f.randomised_arms) for x in lost):
        f.outcome_arms = tuple(
            r - sum(x.per_arm[i] for x in lost) for i, r in enumerate(f.randomised_arms)
        )


def _outcome_fallbacks(f: Flow, counts: Sequence[Count], rand: list[Count], lost: list[Count]) -> None:
    """Without an outcome number: the complement of a ``lost_share`` ("Loss to follow-up
    was only 2.7%"), then per-arm denominators of a result that add up to the randomised
    number (all analysed)."""
    if f.outcome is None and not f.outcome_percents and not lost:
        ls = next((x for x in counts if x.kind == "lost_share"), None)
        if ls is not None:  # "Loss to follow-up was only 2.7%"
            f.outcome_percents = (100 - ls.percents[0],)
            f.evidence = [(ls.start, ls.end)]
    if f.outcome is None and f.randomised:
        # per-arm denominators of a result that add up to the randomised number: all analysed
        den = next((x for x in counts if x.kind == "denominators" and x.total == f.randomised
                    and (not f.randomised_arms or sorted(x.per_arm) == sorted(f.randomised_arms))), None)
        if den is not None:
            f.outcome, f.outcome_arms = f.randomised, den.per_arm
            f.evidence = ([(rand[0].start, rand[0].end)] if rand else []) + [(den.start, den.end)]


def _set_analysed(f: Flow, counts: Sequence[Count], rand: list[Count], anal: list[Count]) -> None:
    """The analysed number: randomised minus ``excluded`` when no ``analysis`` statement
    fits, else the best ``analysis`` statement; its evidence (the outcome evidence when
    neither is given)."""
    a = _pick(f, anal)
    excluded = [c for c in counts if c.kind == "excluded"]
    first = [(rand[0].start, rand[0].end)] if rand else []
    if a is None and excluded and f.randomised and sum(c.total or 0 for c in excluded) < f.randomised:
        f.analysed = f.randomised - sum(c.total or 0 for c in excluded)
        f.analysis_evidence = first + [(c.start, c.end) for c in excluded]
    elif a is not None:
        f.analysed = sum(a.per_arm) if a.per_arm and a.of_arm else a.total
        f.analysis_evidence = first + [(a.start, a.end)]
    else:
        f.analysis_evidence = list(f.evidence)


def flow(counts: Sequence[Count]) -> Flow:
    """Combine a document's number statements into one :class:`Flow`.

    The randomised total is the first ``randomised`` statement. The outcome number is
    the largest ``outcome`` statement not above it ("a of b" pairs give per-arm numbers
    and, without a randomised statement, the randomised per arm), else the randomised
    total minus every ``lost`` number, else the largest ``analysis`` statement; an
    ``outcome_all`` statement after the randomised one counts as an ``outcome`` statement
    of the randomised total and arms. The
    analysed number is the largest ``analysis`` statement (else randomised minus
    ``excluded``).

    Parameters
    ----------
    counts : sequence of Count
        All statements of the document, in text order.

    Returns
    -------
    Flow
    """
    f = Flow()
    rand = [c for c in counts if c.kind == "randomised"]
    outc = [c for c in counts if c.kind == "outcome"]
    if rand and rand[0].total:
        # "All had 3-month mRS data": every randomised participant
        outc += [Count("outcome", rand[0].total, rand[0].per_arm, (), c.start, c.end)
                 for c in counts if c.kind == "outcome_all" and c.start > rand[0].start]
    anal = [c for c in counts if c.kind == "analysis"]
    lost = [c for c in counts if c.kind == "lost"]
    _set_randomised(f, rand)
    c = _outcome_statement(f, outc, anal, lost)
    if c is not None:
        _outcome_from(f, c, rand)
    elif f.randomised is not None and lost:
        _outcome_from_losses(f, rand, lost)
    _outcome_fallbacks(f, counts, rand, lost)
    _set_analysed(f, counts, rand, anal)
    if len(f.evidence) == 2 and f.evidence[0] == f.evidence[1]:
        f.evidence = f.evidence[:1]
    return f
