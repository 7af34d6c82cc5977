"""What a refused export must be, for every model family and target: one UserError of one line, naming
the setting, and nothing written; and an existing output is kept unless the export is forced."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from seq2seq.errors import UserError
from seq2seq.export.ctranslate2 import export_ctranslate2


def assert_refused(call: Callable[[], object], message: str, folder: Path) -> None:
    """`call` raises one line of error holding `message`, and `folder` holds what it held before."""
    before = sorted(p.name for p in folder.iterdir())
    with pytest.raises(UserError) as error:
        call()
    assert message in str(error.value) and "\n" not in str(error.value)
    assert sorted(p.name for p in folder.iterdir()) == before


def assert_export_refused(checkpoint: Path, message: str) -> None:
    """Exporting `checkpoint` (alone in its folder) to CTranslate2 in its folder's out/ is refused."""
    assert [p.name for p in checkpoint.parent.iterdir()] == [checkpoint.name]
    assert_refused(
        lambda: export_ctranslate2(checkpoint, checkpoint.parent / "out"), message, checkpoint.parent
    )


def assert_kept_unless_forced(
    export: Callable[..., object], checkpoint: Path, out: Path, written: str
) -> None:
    """`export(checkpoint, out)` refuses an existing `out` and keeps what it holds; with force=True it
    replaces it with the export (whose file `written` is then there)."""
    out.mkdir()
    (out / "mine.txt").write_text("mine")
    with pytest.raises(UserError, match="force=true"):
        export(checkpoint, out)
    assert (out / "mine.txt").read_text() == "mine"
    export(checkpoint, out, force=True)
    assert (out / written).is_file() and not (out / "mine.txt").exists()
