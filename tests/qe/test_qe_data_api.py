"""seq2seq.qe.generate.make_qe_data from Python, without Hydra: it needs nothing of a pass's Translator
but `translate` (the one translation path), loads each checkpoint's once, and seeds a sampling pass with
seed + its index; QeDataSettings has seq2seq-qe-data's defaults and refuses a mistake when built."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq.cli.config.launch import config_dir
from seq2seq.errors import UserError
from seq2seq.qe.corpus import read_qe_corpus
from seq2seq.qe.generate import Pass, QeDataSettings, make_qe_data

SOURCES, REFERENCES = sentences(5, seed=1), sentences(5, seed=2)


class OnlyTranslate:
    """A Translator as make_qe_data may use it: `translate` and nothing else."""

    def __init__(self, name: str, calls: list[tuple[str, Any]]) -> None:
        self.name, self.calls = name, calls

    def translate(self, texts: list[str], *, options: Any, max_tokens: int, on_batch: Any) -> list[Any]:
        self.calls.append((self.name, options))
        on_batch(len(texts))
        return [SimpleNamespace(text=f"{self.name} {text}") for text in texts]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    tokenizer = tiny_tokenizer()
    for name in ("early", "best"):
        save_tiny_checkpoint(tmp_path / f"{name}.pt", tiny_model(tokenizer.vocab_size), tokenizer, step=1)
    for split in ("train", "dev"):
        (tmp_path / f"{split}.en").write_text("".join(s + "\n" for s in SOURCES), encoding="utf-8")
        (tmp_path / f"{split}.es").write_text("".join(r + "\n" for r in REFERENCES), encoding="utf-8")
    return tmp_path


def settings_in(root: Path, **changes: Any) -> QeDataSettings:
    values = {
        "output_dir": root / "qe", "train_source": root / "train.en", "train_reference": root / "train.es",
        "dev_source": root / "dev.en", "dev_reference": root / "dev.es",
        "train_passes": [(root / "early.pt", "greedy"), (root / "best.pt", "sample")],
        "dev_passes": [(root / "best.pt", "beam")], "seed": 7,
    }  # fmt: skip
    return QeDataSettings(**{**values, **changes})


def test_make_qe_data_needs_nothing_of_a_translator_but_translate(project: Path) -> None:
    calls: list[tuple[str, Any]] = []
    loaded: list[Path] = []

    def load(checkpoint: Path) -> Any:
        loaded.append(checkpoint)
        return OnlyTranslate(checkpoint.stem, calls)

    summary = make_qe_data(settings_in(project, progress_bar=False), load)
    assert loaded == [project / "early.pt", project / "best.pt"]  # best.pt loaded once for two passes
    assert [name for name, _ in calls] == ["early", "best", "best"]
    greedy, sample, beam = (options for _, options in calls)
    assert (greedy.beam_size, sample.sampling, sample.seed, beam.beam_size) == (1, True, 8, 5)  # seed + 1
    corpus = read_qe_corpus(project / "qe" / "train.tsv")
    assert corpus.translations == [f"early {s}" for s in SOURCES] + [f"best {s}" for s in SOURCES]
    assert (summary["train_pairs"], summary["dev_pairs"]) == (10, 5)
    assert [one["pass"] for one in summary["passes"]] == ["train.0", "train.1", "dev.0"]


def test_the_settings_defaults_are_the_commands(project: Path) -> None:
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        cfg = compose("qe_data", overrides=["output_dir=x", "train_passes=[]", "dev_passes=[]"])
    settings = settings_in(project, seed=1)
    for key in ("max_train_sentences", "metric", "seed", "precision", "max_tokens"):
        assert getattr(settings, key) == cfg[key], key
    assert cfg.progress_bar == "auto" and settings.progress_bar is None
    assert settings.train_passes[1] == Pass("train", 1, project / "best.pt", "sample")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (lambda root: {"train_passes": []}, "train_passes is empty"),
        (lambda root: {"dev_passes": [("no.pt", "beam")]}, "dev_passes[0].checkpoint=no.pt does not exist"),
        (lambda root: {"dev_passes": [(root / "best.pt", "nucleus")]}, "decode='nucleus' in a QE pass"),
        (lambda root: {"dev_passes": [Pass("train", 0, root / "best.pt", "beam")]}, "is pass train.0"),
        (lambda root: {"metric": "bleu"}, "metric='bleu'"),
        (lambda root: {"max_train_sentences": 0}, "max_train_sentences=0"),
    ],
)
def test_a_mistake_in_the_settings_is_one_line_when_they_are_built(project, changes, message) -> None:
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        settings_in(project, **changes(project))
