"""Prompt templates, kept as data files (``clinex/resources/llm/<name>.yaml``).

A template file is a YAML mapping with ``version`` (int) and one string per part
(``system``, ``user``, ...). Parts use ``$name`` placeholders
(:class:`string.Template`), so that JSON braces in a prompt need no escaping.
:func:`load_prompt` reads and checks a file; :meth:`Prompt.render` fills one part and
names the file and part when a placeholder has no value.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from clinex.errors import FormatError

__all__ = ["Prompt", "load_prompt", "prompt_path"]


def prompt_path(name: str) -> Path:
    """The packaged file of prompt ``name`` (``pv``, ``rob``, ``cohort``)."""
    return Path(str(resources.files("clinex.resources") / "llm" / f"{name}.yaml"))


@dataclass(frozen=True)
class Prompt:
    """A prompt template.

    Attributes
    ----------
    name : str
        ``pv``, ``rob`` or ``cohort`` (or a file stem).
    version : int
        Bumped when the wording changes; part of the model's provenance.
    parts : dict of str to str
        Template text per part.
    source : str
        The file it came from.
    """

    name: str
    version: int
    parts: dict[str, str]
    source: str

    @property
    def id(self) -> str:
        """``<name>.v<version>``, recorded with the answers."""
        return f"{self.name}.v{self.version}"

    def render(self, part: str, /, **values: Any) -> str:
        """Part ``part`` with its ``$placeholders`` filled.

        Raises
        ------
        FormatError
            No such part, or a placeholder without a value.
        """
        if part not in self.parts:
            raise FormatError(f"prompt has no part {part!r}; parts: {', '.join(self.parts)}", path=self.source)
        try:
            return string.Template(self.parts[part]).substitute({k: str(v) for k, v in values.items()})
        except KeyError as exc:
            raise FormatError(f"placeholder ${exc.args[0]} has no value", path=self.source, field=part) from None
        except ValueError as exc:
            raise FormatError(f"bad placeholder ({exc})", path=self.source, field=part) from None


def load_prompt(name_or_path: str | Path) -> Prompt:
    """Read a prompt template: a packaged name (``pv``) or a YAML file of your own.

    Raises
    ------
    FormatError
        Not a mapping, no integer ``version``, or a part that is not a string.
    """
    from clinex.io.textfile import parse_yaml, read_text

    p = Path(name_or_path)
    path = p if p.suffix in (".yaml", ".yml") else prompt_path(str(name_or_path))
    data = parse_yaml(read_text(path), path=path)
    if not isinstance(data, dict):
        raise FormatError("a prompt file is a mapping of parts", path=path)
    version = data.get("version")
    if not isinstance(version, int):
        raise FormatError("'version' must be an integer", path=path, field="version")
    parts = {}
    for k, v in data.items():
        if k == "version":
            continue
        if not isinstance(v, str):
            raise FormatError("a prompt part must be text", path=path, field=str(k))
        parts[str(k)] = v
    return Prompt(name=path.stem, version=version, parts=parts, source=str(path))
