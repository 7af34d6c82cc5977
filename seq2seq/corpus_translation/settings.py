"""What a corpus translation run is told besides its Translator, typed and checked when built, so that a
mistake stops the run before a model loads or a file is written.

The names are the command line's (configs/backtranslate.yaml, configs/distill.yaml), and so are the
defaults (tests/corpus_translation compares them). Paths may be given as strings; they are kept as
given, so a caller that wants absolute ones in report.json passes absolute ones (the commands do).
`src_lang` / `tgt_lang` are always the direction of translation: what the model running reads and what
it writes. `precision` and `quantization` say how the Translator was loaded: they are part of the
run's fingerprint (bf16 translates otherwise than fp32) and of its report.
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from seq2seq.corpus_translation.input_lines import count_lines
from seq2seq.corpus_translation.score_filter import SCORE_SUFFIX, ScoreFilter
from seq2seq.data.corpus import check_policy
from seq2seq.errors import UserError
from seq2seq.nn.quantized import QUANTIZATIONS
from seq2seq.precision import check_precision

LANGUAGE = re.compile(r"[A-Za-z0-9_-]+")  # a language code is also a file-name suffix


@dataclass(frozen=True)
class CorpusSettings:
    """A whole file translated into a corpus in chunks of `chunk_lines` lines, resumable in `output_dir`.
    `checkpoint`: the files the Translator was loaded from (a .pt file, an exported directory, or a
    tuple of .pt files for an ensemble): their sha256 is part of the run's fingerprint.
    `progress_bar`: None shows one on a terminal; without one, a log line per chunk."""

    MODEL: ClassVar[str] = "model"  # what `checkpoint` must be, for errors
    TEXT: ClassVar[str] = "the text to translate"  # what `input` must be, for errors
    ENSEMBLES: ClassVar[bool] = False  # whether `checkpoint` may be several files

    checkpoint: Path | tuple[Path, ...]
    input: Path
    output_dir: Path
    src_lang: str | None = None
    tgt_lang: str | None = None
    chunk_lines: int = 10000
    max_tokens: int = 4096
    encoding_errors: str = "strict"
    force: bool = False
    progress_bar: bool | None = None
    precision: str = "fp32"
    quantization: str = "none"

    def __post_init__(self) -> None:
        many = isinstance(self.checkpoint, (list, tuple))
        if many and not self.ENSEMBLES:
            raise UserError(f"checkpoint= takes one {self.MODEL} (a .pt file or an exported directory), not "
                            "a list")  # fmt: skip
        if many and not self.checkpoint:
            raise UserError("checkpoint=[] names no model; pass a .pt file, an exported directory or a list "
                            "of .pt files")  # fmt: skip
        given = self.checkpoint
        object.__setattr__(self, "checkpoint", tuple(map(Path, given)) if many else Path(given))  # type: ignore[arg-type]
        object.__setattr__(self, "input", Path(self.input))
        object.__setattr__(self, "output_dir", Path(self.output_dir))
        for name in ("chunk_lines", "max_tokens"):
            _check_count(getattr(self, name), name)
        check_policy(self.encoding_errors)
        if not isinstance(self.force, bool):
            raise UserError(f"force={self.force!r} must be true or false")
        if self.progress_bar is not None and not isinstance(self.progress_bar, bool):
            raise UserError(f"progress_bar={self.progress_bar!r} must be true, false or None (on a terminal)")
        check_precision(self.precision)
        if self.quantization not in QUANTIZATIONS:
            raise UserError(f"quantization={self.quantization!r} is not supported; choose "
                            f"{' or '.join(QUANTIZATIONS)}")  # fmt: skip
        for key in ("src_lang", "tgt_lang"):
            value = getattr(self, key)
            if value is not None and not (isinstance(value, str) and LANGUAGE.fullmatch(value)):
                raise UserError(f"{key}={value!r} is not a file suffix; use letters, digits, - or _ "
                                "(e.g. en)")  # fmt: skip

    @property
    def checkpoints(self) -> tuple[Path, ...]:
        """One model's path, or an ensemble's members in order."""
        return self.checkpoint if isinstance(self.checkpoint, tuple) else (self.checkpoint,)


@dataclass(frozen=True)
class BacktranslateSettings(CorpusSettings):
    """Back-translation: a reverse model translates monolingual text into synthetic sources. `src_lang`:
    the language the model reads (the input's; the corpus's target side), `tgt_lang`: the language it
    writes (the synthetic source side); None: the model's own. The corpus is bt.<tgt_lang> (synthetic
    sources) and bt.<src_lang> (the input lines)."""

    MODEL: ClassVar[str] = "reverse model"
    TEXT: ClassVar[str] = "monolingual text in the language the reverse model reads (src_lang)"


@dataclass(frozen=True)
class DistillSettings(CorpusSettings):
    """Distillation: a teacher (one model or an ensemble) translates the training sources. `src_lang`:
    the language the teacher reads (the input's), `tgt_lang`: the one it writes; None: the teacher's
    own. `filter`: the teacher-score filter (ScoreFilter)."""

    MODEL: ClassVar[str] = "teacher"
    TEXT: ClassVar[str] = "the source text to distill (the training sources)"
    ENSEMBLES: ClassVar[bool] = True

    filter: ScoreFilter = dataclasses.field(default_factory=ScoreFilter)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.filter, ScoreFilter):
            raise UserError(f"filter={self.filter!r} must be a ScoreFilter(drop_fraction=, min_score=)")
        languages = {"src_lang": self.src_lang, "tgt_lang": self.tgt_lang}
        clash = [f"{key}={value}" for key, value in languages.items() if value == SCORE_SUFFIX]
        if clash:
            raise UserError(f"{' '.join(clash)}: the languages must differ from {SCORE_SUFFIX!r} (the scores "
                            "file's suffix)")  # fmt: skip


def _check_count(value: Any, setting: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"{setting}={value!r} must be an integer of at least 1")


@dataclass(frozen=True)
class CheckedInput:
    """What `check_input` found before any model loads: the input's line count (the file is read once for
    it) and when the run began (report.json's wall_seconds count from there)."""

    lines: int
    started: float


def check_files(settings: CorpusSettings) -> None:
    """The files exist and are of the right kind: a one-line error otherwise, before anything loads."""
    if str(settings.input) == "-":
        raise UserError("input=- (stdin) cannot be resumed or counted; pass a file (plain or .gz)")
    for checkpoint in settings.checkpoints:
        if not checkpoint.exists():
            raise UserError(f"checkpoint={checkpoint} does not exist; pass the {settings.MODEL}: a .pt file "
                            "of seq2seq-train or a directory of seq2seq-export")  # fmt: skip
    if not settings.input.is_file():
        what = "is not a file" if settings.input.exists() else "does not exist"
        raise UserError(f"input={settings.input} {what}; pass {settings.TEXT}, one sentence per line "
                        "(plain or .gz)")  # fmt: skip
    output_dir = settings.output_dir
    if output_dir.exists() and not output_dir.is_dir():
        raise UserError(f"output_dir={output_dir} is a file; pass a directory (new, or an earlier run's)")


def check_input(settings: CorpusSettings) -> CheckedInput:
    """Check the files and count the input's lines (a damaged .gz file, or one without text, is its
    one-line error): all that can fail before a model loads or a file is written."""
    started = time.perf_counter()
    check_files(settings)
    return CheckedInput(lines=count_lines(settings.input), started=started)


__all__ = [
    "LANGUAGE",
    "BacktranslateSettings",
    "CheckedInput",
    "CorpusSettings",
    "DistillSettings",
    "check_files",
    "check_input",
]
