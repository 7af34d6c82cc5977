"""Read the YAML files of configs/ together with their comments.

One reader for two users: the manual's configuration reference (docs/hooks/reference_pages.py) prints
every key with its default and its comment, and tests/docs/test_config_comments.py fails when a key has
no comment. Needs PyYAML only (no MkDocs), so the test runs without the docs extra.

The comment rule (the test's docstring says it too):

* A file opens with a comment block that says what it is (after the `# @package ...` line, if any).
  That block describes the file, not the key below it.
* Every key of a block mapping, at any depth, has a comment: an inline `# ...` on its line (it may go
  on over the next lines, each `#` in the same column as the first), or one or more comment lines
  directly above it (no blank line between) that start in the key's own column.
* Keys inside a one-line flow collection (`{src: a, tgt: b}`, `[0.9, 0.98]`) are covered by the comment
  of the key that holds it. List items are not keys: a list of scalars is described by its key's comment;
  a mapping inside a list item follows the key rule (its first key may take the comment above its dash).
* The `defaults:` list (Hydra's composition order) and its entries need no comment: each entry names a
  config file, and that file's opening comment describes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

PACKAGE_DIRECTIVE = re.compile(r"^#\s*@package\s+(\S+)")
COMMENT_START = re.compile(r"(?:^|\s)#")


@dataclass
class Entry:
    """One key: its dotted path inside the file, where it is, its value as written, and its comment."""

    key: str
    line: int  # 1-based
    value: str | None  # None: a section (a block mapping follows)
    comment: str  # "" when it has none


@dataclass
class ConfigFile:
    """A parsed config: what `reference_pages.py` renders and the comment test checks."""

    path: Path  # relative to the configs directory
    package: str  # the dotted prefix its keys get in the composed config ("" = global)
    header: list[str]  # the opening comment, one string per line, "#" removed
    defaults: list[str] = field(default_factory=list)  # entries of the defaults list, as written
    entries: list[Entry] = field(default_factory=list)

    @property
    def group(self) -> str:
        """ "model/positional" for configs/model/positional/rope.yaml; "" for a primary config."""
        return self.path.parent.as_posix() if self.path.parent != Path(".") else ""

    @property
    def option(self) -> str:
        return self.path.stem

    def missing_comments(self) -> list[Entry]:
        return [entry for entry in self.entries if not entry.comment]


def _strip_hash(line: str) -> str:
    text = line.strip()[1:]
    return text[1:] if text.startswith(" ") else text


def _header_lines(lines: list[str]) -> tuple[list[str], str | None, int]:
    """The opening comment block (without the @package line), the package directive, and the index
    of the first line after the block."""
    header: list[str] = []
    package = None
    index = 0
    while index < len(lines) and lines[index].strip().startswith("#"):
        match = PACKAGE_DIRECTIVE.match(lines[index].strip())
        if match and index == 0:
            package = match.group(1)
        else:
            header.append(_strip_hash(lines[index]))
        index += 1
    return header, package, index


def _package(path: Path, directive: str | None) -> str:
    group = path.parent.as_posix() if path.parent != Path(".") else ""
    if directive is None or directive == "_group_":
        return group.replace("/", ".")
    if directive == "_global_":
        return ""
    return directive.replace("_group_", group.replace("/", "."))


def _inline_comment(lines: list[str], key: yaml.Node, value: yaml.Node) -> str:
    """The `# ...` after a key's value on its own line, with its continuation lines."""
    row = key.start_mark.line
    text = lines[row]
    # after the value when it ends on this line; else after the key (a block follows, or a `|` text)
    start = value.end_mark.column if value.end_mark.line == row else key.end_mark.column
    match = COMMENT_START.search(text, start)
    if match is None:
        return ""
    column = text.index("#", match.start())
    parts = [text[column + 1 :].strip()]
    for following in lines[row + 1 :]:
        if following.strip().startswith("#") and following.index("#") == column:
            parts.append(_strip_hash(following))
        else:
            break
    return " ".join(part for part in parts if part)


def _comment_above(lines: list[str], row: int, columns: tuple[int, ...], header_end: int) -> str:
    """Comment lines directly above `row` that start in one of `columns` (not the file's opening block)."""
    parts: list[str] = []
    index = row - 1
    while index >= 0 and lines[index].strip().startswith("#"):
        if len(lines[index]) - len(lines[index].lstrip()) not in columns:
            break
        parts.append(_strip_hash(lines[index]))
        index -= 1
    if not parts or index + 1 < header_end:
        return ""
    return " ".join(part for part in reversed(parts) if part)


def _value_text(lines: list[str], value: yaml.Node) -> str | None:
    """The value as written in the file (interpolations kept), or None for a block mapping."""
    if isinstance(value, yaml.MappingNode) and not value.flow_style:
        return None
    if isinstance(value, yaml.SequenceNode) and not value.flow_style:
        items = [_value_text(lines, item) or "..." for item in value.value]
        return "[" + ", ".join(items) + "]"
    if isinstance(value, yaml.ScalarNode) and value.style in ("|", ">"):
        return "(text)"
    start, end = value.start_mark, value.end_mark
    if start.line == end.line:
        return lines[start.line][start.column : end.column]
    if isinstance(value, yaml.ScalarNode):
        return value.value
    return " ".join(line.strip() for line in lines[start.line : end.line + 1])


class _Reader:
    def __init__(self, lines: list[str], header_end: int, config: ConfigFile) -> None:
        self.lines = lines
        self.header_end = header_end
        self.config = config

    def mapping(self, node: yaml.MappingNode, prefix: str, dash_column: int | None = None) -> None:
        for position, (key, value) in enumerate(node.value):
            name = f"{prefix}{key.value}"
            if not prefix and key.value == "defaults" and isinstance(value, yaml.SequenceNode):
                self.config.defaults = [self._default_entry(item) for item in value.value]
                continue
            columns = (key.start_mark.column,)
            if position == 0 and dash_column is not None:
                columns = (key.start_mark.column, dash_column)
            comment = _inline_comment(self.lines, key, value) or _comment_above(
                self.lines, key.start_mark.line, columns, self.header_end
            )
            self.config.entries.append(
                Entry(name, key.start_mark.line + 1, _value_text(self.lines, value), comment)
            )
            self.children(value, f"{name}.")

    def children(self, value: yaml.Node, prefix: str) -> None:
        if isinstance(value, yaml.MappingNode) and not value.flow_style:
            self.mapping(value, prefix)
        elif isinstance(value, yaml.SequenceNode) and not value.flow_style:
            for index, item in enumerate(value.value):
                if isinstance(item, yaml.MappingNode) and not item.flow_style:
                    dash = self.lines[item.start_mark.line].index("-")
                    self.mapping(item, f"{prefix[:-1]}[{index}].", dash_column=dash)

    def _default_entry(self, item: yaml.Node) -> str:
        if isinstance(item, yaml.MappingNode):
            return ", ".join(f"{k.value}: {_value_text(self.lines, v)}" for k, v in item.value)
        return str(_value_text(self.lines, item))


def read_config(configs_dir: Path, path: Path) -> ConfigFile:
    """Parse configs_dir/path (path relative to configs_dir)."""
    text = (configs_dir / path).read_text(encoding="utf-8")
    lines = text.splitlines()
    header, directive, header_end = _header_lines(lines)
    config = ConfigFile(path=path, package=_package(path, directive), header=header)
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if isinstance(root, yaml.MappingNode):
        _Reader(lines, header_end, config).mapping(root, "")
    return config


def read_configs(configs_dir: Path) -> list[ConfigFile]:
    """Every *.yaml under configs_dir, primary configs first, then the groups in path order."""
    paths = sorted(p.relative_to(configs_dir) for p in configs_dir.rglob("*.yaml"))
    paths.sort(key=lambda p: (len(p.parts) > 1, p.parent.as_posix(), p.stem))
    return [read_config(configs_dir, path) for path in paths]
