"""What every entry point does first: find the config tree, and print a UserError as one line (exit 2);
and the one way a Hydra command's `main` is made (`command_main`)."""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from seq2seq.cli.config.renamed_keys import accept_deprecated_keys, deprecated_keys, refuse_renamed_keys
from seq2seq.errors import UserError

if TYPE_CHECKING:
    from omegaconf import DictConfig

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("seq2seq")


def config_dir() -> str:
    """Absolute path of the Hydra config tree: a directory, which `@hydra.main(config_path=...)` and
    `initialize_config_dir` both take.

    An installed wheel carries a copy of the repository's ``configs/`` as the package data
    ``seq2seq/configs`` (setup.py puts it there), found through importlib.resources. A source tree (the
    editable install, or the package on PYTHONPATH) has no such copy and uses the ``configs/`` beside the
    package, so that edits there apply at once.
    """
    package = resources.files("seq2seq")
    if not isinstance(package, Path):  # a zip archive: Hydra reads configs from a directory
        raise UserError(f"seq2seq is imported from an archive ({package}); install it with pip")
    package = package.resolve()
    for candidate in (package / "configs", package.parent / "configs"):
        if _is_config_tree(candidate):
            return str(candidate)
    raise UserError(
        f"no config tree found: neither the package data {package / 'configs'} (an installed wheel) nor "
        f"{package.parent / 'configs'} (a source checkout); reinstall seq2seq"
    )


def _is_config_tree(path: Path) -> bool:
    return (path / "train.yaml").is_file() and (path / "model").is_dir()


def exit_on_user_error(fn: F) -> F:
    """Print a UserError as one line on stderr and exit 2 instead of showing a traceback.

    A reader that stops early (`seq2seq-translate ... | head -1`) closes the pipe: exit 1 quietly, as
    other Unix tools do, rather than with a BrokenPipeError traceback.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UserError as error:
            print(f"error: {error}", file=sys.stderr)
            sys.exit(2)
        except BrokenPipeError:
            os.dup2(
                os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno()
            )  # the exit flush must not fail again
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def command_main(
    run: Callable[[DictConfig], Any], *, command: str, config_name: str, refused: dict[str, str] | None = None
) -> Callable[[], Any]:
    """The console script of a Hydra command: `run` on the config Hydra composes from configs/<config_name>
    .yaml and the command line, after the command's renamed keys (seq2seq.cli.config.command_settings) are
    taken under their new names with a warning, and the keys in `refused` (old -> new) refused."""
    import hydra

    def main(cfg: DictConfig) -> Any:
        return run(cfg)

    main.__module__, main.__doc__ = run.__module__, run.__doc__  # Hydra names the job after the module
    composed = hydra.main(version_base="1.3", config_path=config_dir(), config_name=config_name)(main)
    accepting = accept_deprecated_keys(deprecated_keys(command))(composed)
    return refuse_renamed_keys(refused)(accepting) if refused else accepting
