"""``require_file``: a folder given where a file is expected is named as a folder."""

from pathlib import Path

import pytest

from clinex.errors import InputError
from clinex.io.textfile import require_file
from clinex.pv.formats.phee_json import read_phee_json


def test_folder_and_missing_file_messages(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=rf"\[CLX001\] {tmp_path}: is a folder, not a file"):
        require_file(tmp_path)
    with pytest.raises(InputError, match=rf"\[CLX001\] {tmp_path / 'x.json'}: no such file"):
        require_file(tmp_path / "x.json")
    f = tmp_path / "a.json"
    f.write_text("", encoding="utf-8")
    assert require_file(f) == f
    with pytest.raises(InputError, match="is a folder, not a file"):  # through the PHEE reader
        read_phee_json(tmp_path)


def test_parse_yaml_names_file_line_and_error_class() -> None:
    from clinex.errors import FormatError, SchemaError
    from clinex.io.textfile import parse_yaml

    assert parse_yaml("a: 1\nb: [2, 3]\n", path="x.yaml") == {"a": 1, "b": [2, 3]}
    # the unclosed list is found at the end of the stream, line 4
    with pytest.raises(FormatError, match=r"\[CLX002\] x\.yaml:4: not valid YAML: expected ',' or '\]'"):
        parse_yaml("a: 1\nb: 2\nc: [1, 2\n", path="x.yaml")
    with pytest.raises(SchemaError, match=r"c\.yaml:2: invalid YAML: "):
        parse_yaml("a: 1\nb: c: d\n", path="c.yaml", error=SchemaError, what="invalid YAML")
