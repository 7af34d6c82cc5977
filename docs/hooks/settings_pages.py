"""The two generated pages of settings, for the MkDocs hook (reference_pages.py):

* `reference/translation-settings.md`: every translation setting under its name in the CLI, in Python and
  in the server's JSON, and the old names still accepted (seq2seq/inference/settings.py).
* `reference/command-settings.md`: every command's settings, each name with its one meaning, and the keys
  renamed in this release (seq2seq/cli/config/command_settings.py).

Both tables are read from their files, not imported: they use the standard library only, so the manual
builds without PyTorch or Hydra.
"""

from __future__ import annotations

import html
import importlib.util
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SETTINGS_PAGE = "reference/translation-settings.md"
SETTINGS_MODULE = ROOT / "seq2seq" / "inference" / "settings.py"
COMMANDS_PAGE = "reference/command-settings.md"
COMMANDS_MODULE = ROOT / "seq2seq" / "cli" / "config" / "command_settings.py"
ERRORS_MODULE = ROOT / "seq2seq" / "errors.py"


# --------------------------------------------------------------------------------- settings table


def _settings_module() -> Any:
    """seq2seq/inference/settings.py, read from its file: it imports nothing but the standard library, so
    the manual builds without PyTorch."""
    return _module_from_file("seq2seq_translation_settings", SETTINGS_MODULE)


def _module_from_file(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _cell(name: str | None) -> str:
    return "—" if name is None else f"`{name}`"


def _alias_name(new: str) -> str:
    """A name as code; a phrase ("each n-best record's ...") as text."""
    return html.escape(new, quote=False) if " " in new else f"`{new}`"


def settings_page() -> str:
    settings = _settings_module()
    rows = []
    for setting in settings.SETTINGS:
        python = None if setting.python is None else f"{setting.python}"
        where = "" if setting.python_in is None else f" ({setting.python_in})"
        serve = _cell(setting.cli) if setting.serve_cli else "—"
        note = f" *Names differ: {setting.differs}.*" if setting.differs else ""
        cells = [_cell(setting.cli), serve, _cell(python) + where, _cell(setting.server),
                 html.escape(setting.description, quote=False).replace("|", "&#124;") + note]  # fmt: skip
        rows.append("| " + " | ".join(cells) + " |")
    message = _deprecation_line()
    commands = _commands_module()
    cli = [f"| cli | {old.command} | `{old.old}` | {_old_value_names(old)} |" for old in commands.OLD_NAMES
           if old.command in ("seq2seq-translate", "seq2seq-serve")]  # fmt: skip
    aliases = cli + [
        f"| {alias.surface} | {alias.where} | `{alias.old}` | {_alias_name(alias.new)} |"
        for alias in settings.DEPRECATED
    ]
    return "\n".join([
        "# Translation settings",
        "",
        "Generated from `seq2seq/inference/settings.py` each time the manual is built. A setting has one "
        "name on every surface that offers it: `seq2seq-translate` (and `seq2seq-serve` where it has the "
        "key; `decode.<key>` is a key of the `decode` group), Python (`Translator.from_checkpoint`, "
        "`Translator.translate`, or a field of `SearchOptions` passed as `options=`) and the JSON body of "
        "the server's `POST /translate`. — : that surface does not offer it.",
        "",
        "| seq2seq-translate | seq2seq-serve | Python | server JSON | what it is |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "## Old names",
        "",
        "Renamed settings keep their old name for one release; using one logs (CLI keys, JSON fields) or "
        "warns (Python keywords, a `DeprecationWarning`) once: "
        f"\"{message}\". The server still sends the old answer fields "
        "beside the new ones until then.",
        "",
        "| surface | where | old name | new name |",
        "|---|---|---|---|",
        *aliases,
        "",
    ])  # fmt: skip


def _deprecation_line() -> str:
    errors = _module_from_file("seq2seq_errors", ERRORS_MODULE)  # the standard library only, too
    return html.escape(errors.deprecation_message("<old>", "<new>"), quote=False)


# --------------------------------------------------------------------------------- command settings


def _commands_module() -> Any:
    """seq2seq/cli/config/command_settings.py, read from its file (the standard library only)."""
    return _module_from_file("seq2seq_command_settings", COMMANDS_MODULE)


def _key_as_typed(command: Any, key: str) -> str:
    """A key as the command takes it: key= for Hydra's commands, --key or an argument for argparse's."""
    if command.config is not None:
        return f"`{key}`"
    return f"`{key}` (positional)" if key in command.positional else f"`--{key}`"


def _old_value_names(old: Any) -> str:
    """The new name of a renamed key: `new`, or each old value with its new spelling."""
    if not old.values:
        return f"`{old.new}`"
    return ", ".join(f"`{old.old}={before}`: `{old.new}={after}`" for before, after in old.values)


def _names_section(module: Any, title: str, names: Any) -> list[str]:
    rows = []
    for name in names:
        where = ", ".join(c.removeprefix("seq2seq-") for c in module.commands_with(name.name))
        meaning = html.escape(name.meaning, quote=False).replace("|", "&#124;")
        rows.append(f"| `{name.name}` | {meaning} | {where} |")
    return [f"### {title}", "", "| name | what it means | commands |", "|---|---|---|", *rows, ""]


def _command_lines(module: Any) -> list[str]:
    lines = []
    for command in module.COMMANDS:
        keys = ", ".join(_key_as_typed(command, key) for key in command.keys)
        source = f"`configs/{command.config}.yaml`" if command.config else "argparse flags: see its `--help`"
        lines += [f"- **{command.name}** ({source}): {keys}"]
    return lines


def commands_page() -> str:
    module = _commands_module()
    names = [line for title, group in module.TOPICS for line in _names_section(module, title, group)]
    old = [f"| {o.command} | `{o.old}` | {_old_value_names(o)} |" for o in module.OLD_NAMES]
    return "\n".join([
        "# Command settings",
        "",
        "Generated from `seq2seq/cli/config/command_settings.py` each time the manual is built. A setting "
        "name means one thing in every command that has it: `output` is always a file the command writes, "
        "`output_dir` a directory, `precision` always takes `auto | fp32 | bf16`, `log_level` is every "
        "command's verbosity. Defaults differ by command and stay in each command's YAML file: see the "
        "[configuration reference](configuration.md); translation settings' names in Python and in the "
        "server's JSON are in [Translation settings](translation-settings.md). A group name (`decode`, "
        "`trainer`, ...) is a config group: its keys are `group.key=...`.",
        "",
        "## Names",
        "",
        *names,
        "## Commands",
        "",
        "Each command's settings, in its config's order.",
        "",
        *_command_lines(module),
        "",
        "## Old names",
        "",
        "Keys renamed in this release: the old name still works until the next release, rewritten to the "
        f"new one with one warning line (\"{_deprecation_line()}\"); both names in one command are an error.",
        "",
        "| command | old name | new name |",
        "|---|---|---|",
        *old,
        "",
    ])  # fmt: skip
