"""MkDocs hook: the pages that are generated at build time, so they cannot drift from the code.

* `reference/configuration.md`: every key of every YAML file in configs/, with its default and its
  comment (read by config_comments.py, the reader the comment test uses too).
* `reference/translation-settings.md`: every translation setting under its name in the CLI, in Python and
  in the server's JSON, and the old names still accepted (the table in seq2seq/inference/settings.py).
* `reference/command-settings.md`: every command's settings, each name with its one meaning, and the keys
  renamed in this release (the table in seq2seq/cli/config/command_settings.py). These two pages are
  written by settings_pages.py.
* `api/...`: one page per module of the seq2seq package, found by walking the package's directory
  (a module that is added, moved or removed changes the pages and the navigation by itself);
  mkdocstrings renders each from its docstrings.
* The navigation: the `api/` entry of mkdocs.yml's nav is replaced by the walked package, and every
  page in docs/studies/ that the nav does not list is added to the Studies section.
"""

from __future__ import annotations

import ast
import html
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from config_comments import ConfigFile, read_configs
from settings_pages import COMMANDS_PAGE, SETTINGS_PAGE, commands_page, settings_page

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "seq2seq"
CONFIGS = ROOT / "configs"
API_MARKER = "api/"  # the nav value that stands for the generated API pages
CONFIG_PAGE = "reference/configuration.md"
# Layers in import order (the package docstring's order); anything else follows alphabetically.
LAYERS = ["errors", "files", "checkpoint", "precision", "metrics", "nn", "model", "data", "decode", "train",
          "inference", "qe", "export", "serve", "cli"]  # fmt: skip


# ---------------------------------------------------------------------------------------------- API


@dataclass
class Package:
    """A package directory: its dotted name, its modules and its subpackages."""

    name: str
    modules: list[str] = field(default_factory=list)
    packages: list[Package] = field(default_factory=list)


def _order(name: str) -> tuple[int, str]:
    short = name.rsplit(".", 1)[-1]
    return (LAYERS.index(short) if short in LAYERS else len(LAYERS), short)


def walk_package(directory: Path, name: str) -> Package:
    """Modules (files not starting with an underscore) and subpackages (directories with __init__.py)."""
    package = Package(name)
    for path in sorted(directory.iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            package.packages.append(walk_package(path, f"{name}.{path.name}"))
        elif path.suffix == ".py" and not path.name.startswith("_"):
            package.modules.append(f"{name}.{path.stem}")
    package.modules.sort(key=_order)
    package.packages.sort(key=lambda p: _order(p.name))
    return package


def _page(name: str, is_package: bool) -> str:
    parts = name.split(".")
    return "api/" + "/".join(parts) + ("/index.md" if is_package else ".md")


def _summary(name: str, is_package: bool) -> str:
    """The first line of a module's docstring, read without importing it."""
    path = ROOT.joinpath(*name.split("."))
    path = path / "__init__.py" if is_package else path.with_suffix(".py")
    try:
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    except SyntaxError:
        docstring = ""
    first = docstring.strip().split("\n\n")[0].replace("\n", " ")
    return html.escape(first)


def _row(parent: str, name: str, is_package: bool) -> str:
    """A table row linking a package page to a child's page (always below it)."""
    link = Path(_page(name, is_package)).relative_to(Path(_page(parent, True)).parent).as_posix()
    short = name.rsplit(".", 1)[-1]
    return f"| [`{short}`]({link}) | {_summary(name, is_package).replace('|', '&#124;')} |"


def _package_page(package: Package) -> str:
    rows = [_row(package.name, p.name, True) for p in package.packages]
    rows += [_row(package.name, m, False) for m in package.modules]
    table = "\n".join(["| module | what it is |", "|---|---|", *rows]) if rows else ""
    title = "API reference: `seq2seq`" if package.name == PACKAGE else f"`{package.name}`"
    options = "    options:\n      members: false\n      show_root_heading: false\n"
    return f"# {title}\n\n::: {package.name}\n{options}\n## Modules\n\n{table}\n"


def _module_page(name: str) -> str:
    return f"# `{name}`\n\n::: {name}\n"


def api_pages(package: Package) -> dict[str, str]:
    pages = {_page(package.name, True): _package_page(package)}
    for module in package.modules:
        pages[_page(module, False)] = _module_page(module)
    for sub in package.packages:
        pages.update(api_pages(sub))
    return pages


def api_nav(package: Package) -> list[Any]:
    nav: list[Any] = [_page(package.name, True)]
    nav += [{m.rsplit(".", 1)[-1]: _page(m, False)} for m in package.modules]
    nav += [{p.name.rsplit(".", 1)[-1]: api_nav(p)} for p in package.packages]
    return nav


# ------------------------------------------------------------------------------------ configuration

CODE_SPAN = re.compile(r"`([^`]+)`")


def _inline(text: str) -> str:
    """Comment text as HTML: escaped, with `code` spans."""
    escaped = html.escape(text, quote=False)
    return CODE_SPAN.sub(lambda m: f"<code>{m.group(1)}</code>", escaped)


def _header_html(lines: list[str]) -> str:
    """A file's opening comment: prose paragraphs, and lines indented by 2+ spaces as a code block."""
    blocks: list[tuple[str, list[str]]] = []
    for line in lines:
        kind = "code" if line.startswith("  ") else ("blank" if not line.strip() else "text")
        if kind == "blank":
            blocks.append(("blank", []))
            continue
        if blocks and blocks[-1][0] == kind:
            blocks[-1][1].append(line)
        else:
            blocks.append((kind, [line]))
    out = []
    for kind, body in blocks:
        if kind == "code":
            out.append("<pre><code>" + html.escape("\n".join(b[2:] for b in body)) + "</code></pre>")
        elif kind == "text":
            out.append("<p>" + _inline(" ".join(body)) + "</p>")
    return "\n".join(out)


def _anchor(config: ConfigFile) -> str:
    return re.sub(r"[^a-z0-9]+", "-", config.path.with_suffix("").as_posix().lower()).strip("-")


def _config_section(config: ConfigFile) -> str:
    path = config.path.as_posix()
    if config.group:
        use = f"<code>{config.group}={config.option}</code>"
        if config.group in ("experiment", "sweep"):
            use = f"<code>{'+' if config.group == 'sweep' else ''}{config.group}={config.option}</code>"
        title = f"`{path}`"
    else:
        use = f"<code>seq2seq-{config.option}</code>"
        title = f"`{path}`"
    lines = [
        f"### {title} {{#{_anchor(config)}}}",
        "",
        f'<p class="config-use">Used as {use}; keys '
        + (f"under <code>{config.package}.</code>" if config.package else "at the top level")
        + ".</p>",
        _header_html(config.header),
        "",
    ]
    if config.defaults:
        items = ", ".join(f"<code>{html.escape(d)}</code>" for d in config.defaults)
        lines += [f"<p>Defaults list: {items}</p>", ""]
    if config.entries:
        rows = []
        for entry in config.entries:
            key = f"{config.package}.{entry.key}" if config.package else entry.key
            depth = entry.key.count(".") if not any(c in entry.key for c in "/[") else 0
            value = "" if entry.value is None else f"<code>{html.escape(entry.value)}</code>"
            comment = _inline(entry.comment) if entry.comment else "<em>(no comment)</em>"
            rows.append(
                f'<tr><td style="padding-left:{0.8 + 1.2 * depth:.1f}em"><code>{html.escape(key)}</code></td>'
                f"<td>{value}</td><td>{comment}</td></tr>"
            )
        lines += [
            "<table>",
            "<thead><tr><th>key</th><th>default</th><th>comment</th></tr></thead>",
            "<tbody>",
            *rows,
            "</tbody>",
            "</table>",
            "",
        ]
    return "\n".join(lines)


def configuration_page() -> str:
    configs = read_configs(CONFIGS)
    primary = [c for c in configs if not c.group]
    groups: dict[str, list[ConfigFile]] = {}
    for config in configs:
        if config.group:
            groups.setdefault(config.group, []).append(config)
    out = [
        "# Configuration reference",
        "",
        "Generated from the YAML files in `configs/` each time the manual is built: every key, its "
        "default as written in the file, and the comment beside or above it. Keys are shown as you "
        "override them on the command line (`seq2seq-train trainer.max_minutes=30`); a group option "
        "is chosen with `group=option` (`model=base`, `model/positional=rope`). Values such as "
        "`${model.d_model}` are interpolations, resolved when the config is composed; `???` must be given.",
        "",
        "How the files compose, and the rule every key's comment follows, are explained in "
        "[Concepts](../concepts.md#configuration).",
        "",
        "## Commands",
        "",
        "One primary config per command: its defaults list picks an option of each group, and its own "
        "keys are the command's settings.",
        "",
    ]
    out += [_config_section(c) for c in primary]
    for group, members in groups.items():
        options = ", ".join(f"[`{c.option}`](#{_anchor(c)})" for c in members)
        anchor = re.sub(r"[^a-z0-9]+", "-", group.lower())
        out += [f"## `{group}/` {{#group-{anchor}}}", "", f"Options: {options}.", ""]
        out += [_config_section(c) for c in members]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------- MkDocs


def _replace_marker(nav: list[Any], replacement: list[Any]) -> bool:
    for index, item in enumerate(nav):
        if isinstance(item, dict):
            ((title, value),) = item.items()
            if value == API_MARKER:
                nav[index] = {title: replacement}
                return True
            if isinstance(value, list) and _replace_marker(value, replacement):
                return True
    return False


def _listed(nav: Any) -> set[str]:
    if isinstance(nav, str):
        return {nav}
    if isinstance(nav, dict):
        return set().union(*(_listed(v) for v in nav.values()))
    if isinstance(nav, list):
        return set().union(*(_listed(v) for v in nav)) if nav else set()
    return set()


def _add_unlisted_studies(nav: list[Any], docs_dir: Path) -> None:
    listed = _listed(nav)
    for item in nav:
        if isinstance(item, dict) and "Studies" in item and isinstance(item["Studies"], list):
            for path in sorted((docs_dir / "studies").glob("*.md")):
                uri = f"studies/{path.name}"
                if uri not in listed:
                    item["Studies"].append(uri)


def on_config(config: Any) -> Any:
    package = walk_package(ROOT / PACKAGE, PACKAGE)
    if not _replace_marker(config["nav"], api_nav(package)):
        raise ValueError(f"mkdocs.yml's nav has no entry '{API_MARKER}' for the API reference")
    _add_unlisted_studies(config["nav"], Path(config["docs_dir"]))
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    pages = api_pages(walk_package(ROOT / PACKAGE, PACKAGE))
    pages[CONFIG_PAGE] = configuration_page()
    pages[SETTINGS_PAGE] = settings_page()
    pages[COMMANDS_PAGE] = commands_page()
    for uri, content in pages.items():
        files.append(File.generated(config, uri, content=content))
    return files
