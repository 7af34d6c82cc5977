"""TranslationScoreFilter: its scores are the teacher-forced mean log-probabilities the model itself gives,
computed pair by pair here (with the source, and with an empty one for the contrast); the threshold
drops exactly the pairs below it."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
import torch
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq.data.tokenizer import Tokenizer
from seq2seq.data.transforms import check_transform
from seq2seq.errors import UserError
from seq2seq.inference.pair_filter import TranslationScoreFilter, combined, dual_score


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def checkpoints(tokenizer: Tokenizer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pair_filter")
    models = {
        "forward": tiny_model(tokenizer.vocab_size, seed=0),
        "reverse": tiny_model(tokenizer.vocab_size, seed=1),
    }
    return {
        name: save_tiny_checkpoint(folder / f"{name}.pt", model, tokenizer, step=1)
        for name, model in models.items()
    }


PAIRS = list(zip(sentences(7, seed=1), sentences(7, seed=2))) + [("in the beginning", "")]


def reference_score(tokenizer: Tokenizer, source: str, target: str, *, seed: int) -> float:
    """The mean log-probability of target + eos given source, one unpadded sentence, from the model alone."""
    model = tiny_model(tokenizer.vocab_size, seed=seed)
    src = torch.tensor([tokenizer.encode(source) + [tokenizer.eos_id]])
    tgt = tokenizer.encode(target) + [tokenizer.eos_id]
    with torch.no_grad():
        logits = model(src, torch.tensor([[tokenizer.bos_id, *tgt[:-1]]]))[0]  # (T, V)
    log_probs = torch.log_softmax(logits, dim=-1)[torch.arange(len(tgt)), torch.tensor(tgt)]
    return float(log_probs.mean())


def test_the_conditional_score_is_the_teacher_forced_mean_log_probability(
    checkpoints: dict[str, Path], tokenizer: Tokenizer
) -> None:
    scorer = TranslationScoreFilter(
        checkpoint=str(checkpoints["forward"]), method="conditional", max_tokens=40
    )
    expected = [reference_score(tokenizer, s, t, seed=0) for s, t in PAIRS]
    assert scorer.scores(PAIRS) == pytest.approx(expected, abs=1e-5)
    assert all(score < 0 for score in expected)


def test_the_contrastive_score_subtracts_the_empty_source_score(
    checkpoints: dict[str, Path], tokenizer: Tokenizer
) -> None:
    scores = TranslationScoreFilter(checkpoint=str(checkpoints["forward"]), max_tokens=40).scores(PAIRS)
    expected = [
        reference_score(tokenizer, s, t, seed=0) - reference_score(tokenizer, "", t, seed=0) for s, t in PAIRS
    ]
    assert scores == pytest.approx(expected, abs=1e-5)


def test_the_threshold_drops_exactly_the_pairs_below_it(checkpoints: dict[str, Path]) -> None:
    scores = TranslationScoreFilter(checkpoint=str(checkpoints["forward"])).scores(PAIRS)
    threshold = sorted(scores)[3]  # three pairs below it
    kept = TranslationScoreFilter(checkpoint=str(checkpoints["forward"]), min_score=threshold)(PAIRS)
    assert kept == [pair if score >= threshold else None for pair, score in zip(PAIRS, scores)]
    assert kept.count(None) == 3


@pytest.mark.parametrize("method", ["conditional", "contrastive"])
def test_a_reverse_model_adds_the_other_direction(
    checkpoints: dict[str, Path], tokenizer: Tokenizer, method: str
) -> None:
    forward_path, reverse_path = str(checkpoints["forward"]), str(checkpoints["reverse"])
    both = TranslationScoreFilter(checkpoint=forward_path, reverse_checkpoint=reverse_path, method=method)

    def by_hand(source: str, target: str) -> float:
        forward = reference_score(tokenizer, source, target, seed=0)
        backward = reference_score(tokenizer, target, source, seed=1)
        if method == "contrastive":
            forward -= reference_score(tokenizer, "", target, seed=0)
            backward -= reference_score(tokenizer, "", source, seed=1)
        return dual_score(forward, backward) if method == "conditional" else (forward + backward) / 2

    assert both.scores(PAIRS[:3]) == pytest.approx([by_hand(s, t) for s, t in PAIRS[:3]], abs=1e-5)


def test_dual_score_rewards_agreement() -> None:
    assert dual_score(-1.0, -1.0) == -1.0
    assert dual_score(-1.0, -3.0) == -4.0 == dual_score(-3.0, -1.0)
    assert math.isclose(dual_score(-0.5, -0.7), -0.8)
    assert combined(-1.0, -3.0, "contrastive") == -2.0 and combined(-1.0, -3.0, "conditional") == -4.0


def test_settings_follow_the_models_content(checkpoints: dict[str, Path], tmp_path: Path) -> None:
    moved = Path(shutil.copyfile(checkpoints["forward"], tmp_path / "moved.pt"))
    original = TranslationScoreFilter(checkpoint=str(checkpoints["forward"]), min_score=-2)
    check_transform(original)
    assert original.settings() == TranslationScoreFilter(checkpoint=str(moved), min_score=-2).settings()
    assert original.settings() != TranslationScoreFilter(checkpoint=str(moved), min_score=-3).settings()
    other = TranslationScoreFilter(checkpoint=str(checkpoints["reverse"]), min_score=-2)
    assert original.settings()["checkpoint_sha256"] != other.settings()["checkpoint_sha256"]
    assert original([]) == []


def test_a_missing_checkpoint_or_unknown_method_is_one_line(
    checkpoints: dict[str, Path], tmp_path: Path
) -> None:
    with pytest.raises(UserError, match=r"missing\.pt is not a file"):
        TranslationScoreFilter(checkpoint=str(tmp_path / "missing.pt"))
    with pytest.raises(UserError, match="method='pmi' is not one of conditional, contrastive"):
        TranslationScoreFilter(checkpoint=str(checkpoints["forward"]), method="pmi")
