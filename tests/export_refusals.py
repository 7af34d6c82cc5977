"""What a refused CTranslate2 export must be, for every model family: one UserError of one line, naming
the setting, and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from seq2seq.errors import UserError
from seq2seq.export.ctranslate2 import export_ctranslate2


def assert_export_refused(checkpoint: Path, message: str) -> None:
    """Exporting `checkpoint` (alone in its folder) to its folder's out/ is one line of error holding
    `message`, and the folder still holds the checkpoint only."""
    folder = checkpoint.parent
    with pytest.raises(UserError) as error:
        export_ctranslate2(checkpoint, folder / "out")
    assert message in str(error.value) and "\n" not in str(error.value)
    assert sorted(p.name for p in folder.iterdir()) == [checkpoint.name]
