"""``clinex pv e2b RUN``: E2B(R3) ICSRs from a ``clinex batch pv`` run (:mod:`clinex.pv.e2b`).

Registered on the ``clinex pv`` app by :mod:`clinex.pv.cli`; typer only at import, the
rest inside the command.
"""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["e2b_cmd"]


def e2b_cmd(
    run: Path = typer.Argument(..., help="A finished `clinex batch pv` output folder."),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Folder to write (icsr-00001.xml ..., cases.csv); default RUN-e2b beside RUN."),
    force: bool = typer.Option(False, "--force", help="Replace the icsr-*.xml and cases.csv of an existing OUT."),
    sender_org: str | None = typer.Option(
        None, "--sender-org", help="C.3.2 Sender's Organisation (also in C.1.1); default 'UNSPECIFIED SENDER'."),
    sender_country: str = typer.Option(
        "US", "--sender-country", help="C.3.4.5 and C.1.1 country: ISO 3166-1 alpha-2 code (or EU)."),
    sender_id: str | None = typer.Option(
        None, "--sender-id", help="N.1.3 / N.2.r.2 sender identifier agreed with the receiver; "
                                  "default the organisation's name without spaces."),
    received: str | None = typer.Option(
        None, "--received", help="C.1.4 / C.1.5: day the articles came to your attention, YYYYMMDD; default today."),
    per_file: int = typer.Option(100, "--per-file", help="ICSRs per batch file (at least 1)."),
) -> None:
    """Write one E2B(R3) ICSR per literature case of a batch run (HL7 v3, MCCI_IN200100UV01).

    A case is a record with an asserted (not negated) adverse event that names a drug and a
    reaction. Reactions are written as reported; MedDRA coding (E.i.2.1a/b), seriousness
    and the sender's contact details are left to you (docs/pv.md, E2B(R3) export).
    """
    from datetime import datetime

    from clinex.errors import InputError
    from clinex.pv.e2b import DEFAULT_SENDER_ORG, E2BSettings, write_e2b

    if per_file < 1:
        raise InputError(f"--per-file must be >= 1; got {per_file}", field="--per-file")
    day = None
    if received is not None:
        try:
            day = datetime.strptime(received, "%Y%m%d").date()
        except ValueError:
            raise InputError(f"--received must be a date YYYYMMDD such as 20240131; got {received!r}",
                             field="--received") from None
    settings = E2BSettings(sender_org=DEFAULT_SENDER_ORG if sender_org is None else sender_org,
                           sender_country=sender_country, sender_id=sender_id, received=day,
                           per_file=per_file).checked()
    out = output if output is not None else run.parent / f"{run.name}-e2b"
    summary = write_e2b(run, out, settings=settings, force=force)
    if sender_org is None:
        typer.echo(f"warning: --sender-org not given: C.3.2 reads {DEFAULT_SENDER_ORG!r}; give your organisation "
                   "before submitting", err=True)
    skipped = (f"; {summary.no_case} naming no drug or no reaction made none" if summary.no_case else "") + (
        f"; {summary.animals} MEDLINE citation(s) indexed Animals, not Humans, made none" if summary.animals else "")
    typer.echo(f"{summary.icsrs} ICSR(s) from {summary.records} record(s) with an asserted adverse event{skipped} "
               f"-> {out} ({len(summary.files)} batch file(s), cases.csv)", err=True)
    if summary.icsrs:
        typer.echo("before submitting: code each reaction in MedDRA (E.i.2.1a/b), assess seriousness (E.i.3.2) "
                   "and expedited criteria (C.1.7), and add the sender's contact details (C.3.3, C.3.4)", err=True)
