"""Corpus translation: a whole file translated into a training corpus in resumable chunks, by a Translator,
with typed settings; the Python API under seq2seq-backtranslate, seq2seq-distill (the commands only read
their configs and call it).

    from seq2seq import Translator
    from seq2seq.corpus_translation import BacktranslateSettings, backtranslate

    model = Translator.from_checkpoint("runs/bible.es-en/best.pt")
    backtranslate(model, BacktranslateSettings(checkpoint="runs/bible.es-en/best.pt", input="mono.es",
                                               output_dir="bt/mono"))  # report.json's contents

settings.py         BacktranslateSettings, DistillSettings (frozen, checked when built), `check_input`: the
                    checks and the input's line count, before any model loads
backtranslation.py  `backtranslate`: monolingual text + a reverse model -> synthetic parallel data
distillation.py     `distill`: training sources + a teacher -> the corpus a student learns from
score_filter.py     ScoreFilter: the teacher's scores of its translations -> the pairs left out
chunks.py           the file translated chunk by chunk through Translator.translate, each chunk's seed
input_lines.py      the input file counted, cut into chunks, its lines decoded and normalised
output_dir.py       the output directory: settings fingerprint, lock, chunks saved whole, the corpus
run_record.py       the settings fingerprint compared on a rerun, and report.json
languages.py        the languages a model reads and writes: its checkpoint's, a multilingual one's codes
progress.py         a progress bar over input lines, or a log line per chunk
"""

from seq2seq.corpus_translation.backtranslation import backtranslate
from seq2seq.corpus_translation.distillation import distill
from seq2seq.corpus_translation.score_filter import ScoreFilter
from seq2seq.corpus_translation.settings import (
    BacktranslateSettings,
    CheckedInput,
    CorpusSettings,
    DistillSettings,
    check_input,
)

__all__ = [
    "BacktranslateSettings",
    "CheckedInput",
    "CorpusSettings",
    "DistillSettings",
    "ScoreFilter",
    "backtranslate",
    "check_input",
    "distill",
]
