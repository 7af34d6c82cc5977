"""The QE recipe end to end on the toy corpus, as a user runs it: seq2seq-qe-data translates with the toy
run's checkpoints and labels every output with sacrebleu's sentence chrF; seq2seq-qe-train trains
model=encoder_only_tiny on it (a run killed with SIGKILL after update 2 resumes to the weights of a run
never interrupted); seq2seq-qe scores a file as the Python QualityEstimator does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from commands import ENV, KILL_AFTER_SAVE, error_line, run_module
from sacrebleu.metrics import CHRF

from seq2seq import Translator, UserError
from seq2seq.inference.text_input import clean_line, read_text_lines
from seq2seq.qe.corpus import read_qe_corpus
from seq2seq.inference.quality import QualityEstimator


@pytest.fixture(scope="module")
def qe_data(corpus: Path, finished_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("qe") / "data"
    result = run_module(
        "seq2seq.cli.qe_data",
        f"output_dir={out}",
        f"train_source={corpus / 'train.en'}",
        f"train_reference={corpus / 'train.es'}",
        f"dev_source={corpus / 'dev.en'}",
        f"dev_reference={corpus / 'dev.es'}",
        "max_train_sentences=40",
        f"train_passes=[{{checkpoint: {finished_run / 'checkpoint_2.pt'}, decode: greedy}},"
        f"{{checkpoint: {finished_run / 'last.pt'}, decode: sample}}]",
        f"dev_passes=[{{checkpoint: {finished_run / 'last.pt'}, decode: beam}}]",
        cwd=out.parent,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def qe_train(
    data: Path, run_dir: Path, *overrides: str, prefix: list[str] | None = None
) -> subprocess.CompletedProcess:
    arguments = [
        "seq2seq.cli.qe_train", f"data_dir={data}", "model=encoder_only_tiny", f"hydra.run.dir={run_dir}",
        "trainer.max_updates=4", "trainer.validate_every=2", "trainer.save_every=2", "trainer.max_tokens=600",
        "trainer.progress_bar=false", "trainer.num_threads=1", "schedule.warmup=2", *overrides,
    ]  # fmt: skip
    if prefix is None:
        return run_module(*arguments, cwd=run_dir.parent)
    return subprocess.run([sys.executable, "-c", *prefix, *arguments], cwd=run_dir.parent, env=ENV,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip


@pytest.mark.slow
def test_labels_are_sentence_chrf_of_each_pass_against_the_references(qe_data: Path, corpus: Path) -> None:
    references = read_text_lines(corpus / "train.es")[:40]
    sources = read_text_lines(corpus / "train.en")[:40]
    expected = []
    for index in (0, 1):
        translations = read_text_lines(qe_data / "passes" / f"train.{index}.txt")
        assert len(translations) == 40
        chrf = CHRF()
        expected += [(s, t, chrf.sentence_score(t, [r]).score / 100)
                     for s, t, r in zip(sources, translations, references) if t.strip()]  # fmt: skip
    corpus_read = read_qe_corpus(qe_data / "train.tsv")
    # the corpus reader cleans lines as the translator does (spaces squeezed): chrF ignores spaces anyway
    assert list(zip(corpus_read.sources, corpus_read.translations)) == [
        (clean_line(s), clean_line(t)) for s, t, _ in expected
    ]
    assert corpus_read.labels == pytest.approx([label for _, _, label in expected], abs=1e-6)
    assert not (qe_data / "tokenizer.tgt.model").exists()  # the toy run's tokenizer is joint
    summary = json.loads((qe_data / "summary.json").read_text())
    assert [p["pass"] for p in summary["passes"]] == ["train.0", "train.1", "dev.0"]
    assert len(read_qe_corpus(qe_data / "dev.tsv")) == summary["dev_pairs"] > 0


@pytest.mark.slow
def test_a_rerun_reuses_passes_only_when_their_record_matches(
    qe_data: Path, corpus: Path, finished_run: Path
) -> None:
    record = qe_data / "passes" / "train.0.json"
    saved = json.loads(record.read_text())
    assert saved["checkpoint"] == str((finished_run / "checkpoint_2.pt").resolve())
    assert saved["limit"] == 40 and saved["search"]["beam_size"] == 1 and saved["precision"] == "fp32"


@pytest.mark.slow
def test_qe_training_resumes_exactly_and_seq2seq_qe_scores_as_python_does(
    qe_data: Path, tmp_path: Path
) -> None:
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert qe_train(qe_data, whole).returncode == 0
    interrupted = qe_train(qe_data, killed, prefix=[KILL_AFTER_SAVE, "2"])
    assert interrupted.returncode == -9, interrupted.stderr[-2000:]
    resumed = qe_train(qe_data, killed)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed from" in (killed / "qe_train.log").read_text()
    expected = torch.load(whole / "last.pt", weights_only=False)["model"]
    got = torch.load(killed / "last.pt", weights_only=False)["model"]
    assert expected.keys() == got.keys()
    for name in expected:
        assert torch.equal(expected[name], got[name]), name
    summary = json.loads((whole / "summary.json").read_text())
    assert [record["step"] for record in summary["history"]] == [2, 4]
    assert {"loss", "pearson", "spearman"} <= summary["history"][-1].keys()

    dev = read_qe_corpus(qe_data / "dev.tsv")
    sources, hypotheses = tmp_path / "src.txt", tmp_path / "hyp.txt"
    sources.write_text("".join(s + "\n" for s in dev.sources) + "\n", encoding="utf-8")
    hypotheses.write_text("".join(t + "\n" for t in dev.translations) + "\n", encoding="utf-8")
    result = run_module("seq2seq.cli.qe", f"checkpoint={whole / 'best.pt'}", f"input={sources}",
                        f"hypotheses={hypotheses}", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.split("\n")[:-1]
    expected_scores = QualityEstimator.from_checkpoint(whole / "best.pt").score(dev.sources, dev.translations)
    assert lines[:-1] == [f"{score:.4f}" for score in expected_scores]
    assert lines[-1] == ""  # an empty pair: an empty line, and the line count kept
    with pytest.raises(UserError, match=r"holds a quality-estimation model .* use seq2seq-qe"):
        Translator.from_checkpoint(whole / "best.pt")

    averaged = run_module("seq2seq.cli.average", "--inputs", str(whole), "--last", "2", "--output",
                          str(tmp_path / "averaged.pt"), cwd=tmp_path)  # fmt: skip
    assert averaged.returncode == 0, averaged.stderr[-3000:]
    weights = [torch.load(whole / f"checkpoint_{step}.pt", weights_only=False)["model"] for step in (2, 4)]
    mean = torch.load(tmp_path / "averaged.pt", weights_only=False)["model"]
    for name, value in mean.items():
        torch.testing.assert_close(value, (weights[0][name] + weights[1][name]) / 2, msg=name)
    assert len(
        QualityEstimator.from_checkpoint(tmp_path / "averaged.pt").score(dev.sources, dev.translations)
    ) == len(dev)


@pytest.mark.slow
def test_a_qe_run_refuses_a_translation_corpus_dir_and_train_refuses_encoder_only(
    corpus: Path, tmp_path: Path
) -> None:
    refused = qe_train(corpus, tmp_path / "qe")
    assert "has no tokenizer.src.model; make the QE corpus with seq2seq-qe-data" in error_line(refused)
    averaging = qe_train(corpus, tmp_path / "qe", "trainer.average_last=2")
    assert "trainer.average_last belong to translation runs" in error_line(averaging)
    result = run_module("seq2seq.cli.train", "model=encoder_only_tiny", f"hydra.run.dir={tmp_path / 'mt'}",
                        cwd=tmp_path)  # fmt: skip
    assert "model=encoder_only scores translations, it does not translate" in error_line(result)
