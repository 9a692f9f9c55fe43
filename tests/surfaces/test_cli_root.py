from __future__ import annotations

import typer

import clinex.cli as root


def test_version(cli) -> None:
    from clinex import __version__

    res = cli("version")
    assert res.code == 0
    assert res.stdout.strip() == __version__


def test_typer_exit_code_reaches_the_shell(cli, monkeypatch) -> None:
    @root.app.command("_exit3", hidden=True)
    def _exit3() -> None:
        raise typer.Exit(3)

    try:
        assert cli("_exit3").code == 3
    finally:
        root.app.registered_commands = [
            c for c in root.app.registered_commands if c.name != "_exit3"
        ]


def test_clinex_error_gives_code_2_and_message(cli, tmp_path) -> None:
    res = cli("batch", "nosuchtask", str(tmp_path), "--output", str(tmp_path / "o"))
    assert res.code == 2
    assert "[CLX005]" in res.stderr and "valid: pv, cohort, rob" in res.stderr


def test_unknown_command_is_a_usage_error(cli) -> None:
    assert cli("nosuchverb").code == 2
