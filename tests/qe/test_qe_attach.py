"""A QE model attached to translation: every translation's QE score (Translator, seq2seq-translate's
column, the server's "qe" field), and n-best re-ranking by score + weight * QE score, checked against the
same ranking done by hand from a plain n-best search and the QE model's own scores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from commands import error_line, run_module
from fastapi.testclient import TestClient
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq import Translator
from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.inference.rerank import rerank
from seq2seq.model import build_encoder_only, model_size
from seq2seq.inference.quality import QualityEstimator
from seq2seq.serve.app import create_app
from seq2seq.serve.batcher import BatchingTranslator
from seq2seq.serve.metrics import Metrics
from seq2seq.serve.requests import Limits

OPTIONS = {"beam_size": 4, "max_len_a": 0.0, "max_len_b": 10}
TEXTS = [*sentences(6, seed=11), ""]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a translation checkpoint, a QE checkpoint) over the tiny tokenizer, random weights."""
    directory = tmp_path_factory.mktemp("models")
    tokenizer = tiny_tokenizer()
    translation = tiny_model(tokenizer.vocab_size, max_positions=128, sharpness=2.0)
    torch.manual_seed(1)
    vocab = {"src_vocab_size": tokenizer.vocab_size, "tgt_vocab_size": tokenizer.vocab_size}
    qe = build_encoder_only(**vocab, pad_id=tokenizer.pad_id, **model_size("encoder_only_tiny"), dropout=0.0)
    with (
        torch.no_grad()
    ):  # spread the random head's outputs, so that the QE model's choices differ from the beam's
        qe.head[-1].weight.mul_(50.0)
    return (save_tiny_checkpoint(directory / "mt.pt", translation, tokenizer, step=1),
            save_tiny_checkpoint(directory / "qe.pt", qe.eval(), tokenizer, step=1))  # fmt: skip


def test_rerank_orders_by_score_plus_weighted_qe() -> None:
    nbest = [
        Hypothesis([1], -1.0, -1.0, qe=0.1),
        Hypothesis([2], -1.2, -1.2, qe=0.5),
        Hypothesis([3], -3.0, -3.0),
    ]
    assert [h.tokens for h in rerank([nbest], 0.0, 3)[0]] == [[1], [2], [3]]
    assert [h.tokens for h in rerank([nbest], 1.0, 2)[0]] == [[2], [1]]  # -0.7 > -0.9
    assert rerank([[]], 1.0, 1) == [[]]
    constrained = [
        Hypothesis([1], -1.0, -1.0, qe=0.9, constraints_met=1, constraints_total=2),
        Hypothesis([2], -2.0, -2.0, qe=0.1, constraints_met=2, constraints_total=2),
    ]
    assert [h.tokens for h in rerank([constrained], 10.0, 2)[0]] == [[2], [1]]  # met phrases come first


def test_translations_carry_the_qe_models_score(models: tuple[Path, Path]) -> None:
    mt, qe = models
    estimator = QualityEstimator.from_checkpoint(qe)
    translator = Translator.from_checkpoint(mt, options=OPTIONS, qe_checkpoint=estimator)
    results = translator.translate(TEXTS, confidence=True)
    expected = estimator.score(TEXTS[:-1], [r.text for r in results[:-1]])
    assert [r.qe for r in results[:-1]] == pytest.approx(expected, abs=1e-6)
    assert results[-1].qe is None and "qe" not in results[-1].to_json()
    assert results[0].to_json()["qe"] == pytest.approx(expected[0], rel=1e-5)
    by_path = Translator.from_checkpoint(mt, options=OPTIONS, qe_checkpoint=qe)  # loaded as the CLI loads it
    assert by_path.translate(TEXTS, confidence=True) == results


@pytest.mark.parametrize("weight", [0.0, 2.0, 1000.0])
def test_reranking_equals_ranking_the_plain_nbest_by_hand(models: tuple[Path, Path], weight: float) -> None:
    mt, qe = models
    estimator = QualityEstimator.from_checkpoint(qe)
    plain = Translator.from_checkpoint(mt, options=OPTIONS)
    best = plain.translate(TEXTS[:-1], nbest=4)  # per text, its 4 candidates in `nbest`
    expected = []
    for text, candidates in zip(TEXTS, (t.nbest for t in best)):
        estimates = estimator.score([text] * len(candidates), [c.text for c in candidates])
        expected.append(
            # an empty candidate has no QE score, which re-ranking counts as 0 (rerank's docstring)
            max(zip(candidates, estimates), key=lambda p: p[0].score + weight * (p[1] or 0.0))[0].text
        )
    reranked = Translator.from_checkpoint(
        mt, options=OPTIONS, qe_checkpoint=estimator, rerank="qe", rerank_weight=weight
    )
    assert [t.text for t in reranked.translate(TEXTS[:-1])] == expected
    plain_best = [t.text for t in plain.translate(TEXTS[:-1])]
    if weight == 0.0:
        assert expected == plain_best
    if weight == 1000.0:
        assert expected != plain_best  # the QE model does choose other outputs


@pytest.mark.slow
def test_cli_qe_column_and_rerank(models: tuple[Path, Path], tmp_path: Path) -> None:
    mt, qe = models
    source = tmp_path / "in.txt"
    source.write_text("".join(t + "\n" for t in TEXTS), encoding="utf-8")
    common = [
        f"checkpoint={mt}",
        f"input={source}",
        "decode.beam_size=4",
        "decode.max_len_a=0",
        "decode.max_len_b=10",
    ]
    result = run_module("seq2seq.cli.translate", *common, f"qe_checkpoint={qe}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t") for line in result.stdout.split("\n")[:-1]]
    assert len(rows) == len(TEXTS) and rows[-1] == [""]
    estimates = QualityEstimator.from_checkpoint(qe).score(TEXTS[:-1], [row[0] for row in rows[:-1]])
    assert [row[1] for row in rows[:-1]] == ["" if value is None else f"{value:.4f}" for value in estimates]
    reranked = run_module("seq2seq.cli.translate", *common, f"qe_checkpoint={qe}", "rerank=qe",
                          "rerank_weight=1000", cwd=tmp_path)  # fmt: skip
    estimator = QualityEstimator.from_checkpoint(qe)
    by_hand = Translator.from_checkpoint(mt, options=OPTIONS, qe_checkpoint=estimator, rerank="qe",
                                         rerank_weight=1000.0).translate(TEXTS)  # fmt: skip
    assert [line.split("\t")[0] for line in reranked.stdout.split("\n")[:-1]] == [t.text for t in by_hand]
    missing = run_module("seq2seq.cli.translate", *common, "rerank=qe", cwd=tmp_path)
    assert "rerank=qe needs a QE model" in error_line(missing)
    assert "rerank='bleu' is not supported" in error_line(
        run_module("seq2seq.cli.translate", *common, f"qe_checkpoint={qe}", "rerank=bleu", cwd=tmp_path)
    )


@pytest.fixture(scope="module")
def client(models: tuple[Path, Path]) -> Iterator[TestClient]:
    mt, qe = models
    batcher = BatchingTranslator(
        lambda: Translator.from_checkpoint(
            mt, options=OPTIONS, qe_checkpoint=QualityEstimator.from_checkpoint(qe)
        )
    )
    app = create_app(batcher, name="mt.pt", limits=Limits(), metrics=Metrics(), error_delay_ms=0)
    with TestClient(app) as test_client:
        yield test_client


def test_the_server_answers_the_qe_score_with_the_confidence(
    client: TestClient, models: tuple[Path, Path]
) -> None:
    _, qe = models
    answer = client.post("/translate", json={"texts": TEXTS, "confidence": True})
    assert answer.status_code == 200, answer.text
    translations = answer.json()["translations"]
    estimates = QualityEstimator.from_checkpoint(qe).score(
        TEXTS[:-1], [t["text"] for t in translations[:-1]]
    )
    scored = [(t["qe"], estimate) for t, estimate in zip(translations, estimates) if estimate is not None]
    assert scored and all(qe == pytest.approx(estimate, rel=1e-5) for qe, estimate in scored)
    assert all("qe" not in t for t, estimate in zip(translations, estimates) if estimate is None)  # empty
    assert "qe" not in translations[-1]
    plain = client.post("/translate", json={"texts": TEXTS}).json()["translations"]
    assert plain == [t["text"] for t in translations]


@pytest.mark.slow
def test_cli_qe_column_of_an_empty_translation_is_empty(models: tuple[Path, Path], tmp_path: Path) -> None:
    """An output of no tokens (max_len_b=0 allows none) has no QE score: its column is empty, the line's
    other columns stay where they are."""
    mt, qe = models
    source = tmp_path / "in.txt"
    source.write_text("the man\n\n", encoding="utf-8")
    result = run_module("seq2seq.cli.translate", f"checkpoint={mt}", f"input={source}", f"qe_checkpoint={qe}",
                        "decode.max_len_a=0", "decode.max_len_b=0", "scores=true", "confidence=true",
                        cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t") for line in result.stdout.split("\n")[:-1]]
    assert len(rows) == 2 and rows[1] == [""]
    text, score, confidence, estimate = rows[0]
    assert (text, estimate) == ("", "")
    assert float(score) < 0 and 0 <= float(confidence) <= 1
