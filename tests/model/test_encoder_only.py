"""The encoder-only family: its layout, padding invariance under every position scheme and window,
gradient checkpointing, rebuilding from a checkpoint's config, and what other commands refuse."""

from __future__ import annotations

import pytest
import torch

from seq2seq.errors import UserError
from seq2seq.model import build_encoder_only, build_from_config, model_size
from seq2seq.model.encoder_only import join_segments

TINY = model_size("encoder_only_tiny")
SRC_VOCAB, TGT_VOCAB, PAD, EOS = 30, 20, 0, 3


def tiny_qe_model(seed: int = 0, **overrides) -> torch.nn.Module:
    torch.manual_seed(seed)
    arguments = {**TINY, "dropout": 0.0, **overrides}
    return build_encoder_only(
        src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB, pad_id=PAD, **arguments
    ).eval()


def random_rows(count: int, vocab: int, seed: int, longest: int = 9) -> list[list[int]]:
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(count):
        length = int(torch.randint(1, longest, (1,), generator=generator))
        rows.append(torch.randint(4, vocab, (length,), generator=generator).tolist() + [EOS])
    return rows


def padded(rows: list[list[int]]) -> torch.Tensor:
    out = torch.full((len(rows), max(map(len, rows))), PAD, dtype=torch.long)
    for index, row in enumerate(rows):
        out[index, : len(row)] = torch.tensor(row)
    return out


def test_join_segments_puts_each_rows_tokens_first_and_shifts_the_translation() -> None:
    src = torch.tensor([[5, 6, EOS], [7, EOS, PAD]])
    hyp = torch.tensor([[8, EOS, PAD, PAD], [9, 10, 11, EOS]])
    tokens, keep = join_segments(src, hyp, pad_id=PAD, offset=100)
    assert tokens.tolist() == [
        [5, 6, EOS, 108, 103, PAD, PAD],
        [7, EOS, 109, 110, 111, 103, PAD],
    ]
    assert keep.tolist() == [[True] * 5 + [False] * 2, [True] * 6 + [False]]


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope", "alibi"])
@pytest.mark.parametrize("window", [None, 3])
def test_padding_changes_no_score(positional: str, window: int | None) -> None:
    """Each row of a padded batch scores as it does alone (the reference: one unpadded row at a time)."""
    model = tiny_qe_model(positional=positional, window=window)
    sources, translations = random_rows(6, SRC_VOCAB, 1), random_rows(6, TGT_VOCAB, 2)
    with torch.no_grad():
        batch = model(padded(sources), padded(translations))  # (6, 1)
        alone = torch.cat([model(padded([s]), padded([t])) for s, t in zip(sources, translations)])
    torch.testing.assert_close(batch, alone, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "settings",
    [
        {"position_offset": 2},
        {"position_offset": 2, "positional": "learned"},
        {"sinusoid_layout": "fairseq", "position_offset": 2, "scale_embeddings": False, "activation": "silu"},
    ],
    ids=["offset", "learned_offset", "m2m100_like"],
)
def test_the_model_settings_keep_padding_invariance_and_are_recorded(settings: dict) -> None:
    model = tiny_qe_model(**settings)
    sources, translations = random_rows(5, SRC_VOCAB, 1), random_rows(5, TGT_VOCAB, 2)
    with torch.no_grad():
        batch = model(padded(sources), padded(translations))  # (5, 1)
        alone = torch.cat([model(padded([s]), padded([t])) for s, t in zip(sources, translations)])
        assert not torch.allclose(batch, tiny_qe_model()(padded(sources), padded(translations)))
    torch.testing.assert_close(batch, alone, rtol=1e-5, atol=1e-5)
    assert {key: model.config[key] for key in settings} == settings
    assert "output_bias" not in model.config  # no output projection: nothing to bias


def test_the_translation_side_matters_and_its_vocabulary_is_its_own() -> None:
    """The same ids as source or as translation are different tokens (the translation's are shifted)."""
    model = tiny_qe_model()
    row = padded([[5, 6, EOS]])
    with torch.no_grad():
        assert not torch.allclose(model(row, padded([[5, EOS]])), model(row, padded([[6, EOS]])))
        assert not torch.allclose(
            model(padded([[5, EOS]]), padded([[6, EOS]])), model(padded([[6, EOS]]), padded([[5, EOS]]))
        )


def test_gradient_checkpointing_gives_the_same_gradients() -> None:
    sources, translations = padded(random_rows(4, SRC_VOCAB, 3)), padded(random_rows(4, TGT_VOCAB, 4))
    gradients = []
    for checkpointing in (False, True):
        model = tiny_qe_model(checkpoint_activations=checkpointing).train()
        model(sources, translations).sum().backward()
        gradients.append({name: p.grad.clone() for name, p in model.named_parameters()})
    for name, gradient in gradients[0].items():
        torch.testing.assert_close(gradients[1][name], gradient, rtol=1e-5, atol=1e-6, msg=name)


def test_a_checkpoints_config_rebuilds_the_same_model() -> None:
    model = tiny_qe_model(positional="rope")
    rebuilt = build_from_config(model.config)
    rebuilt.load_state_dict(model.state_dict())
    src, hyp = padded(random_rows(3, SRC_VOCAB, 5)), padded(random_rows(3, TGT_VOCAB, 6))
    with torch.no_grad():
        assert torch.equal(rebuilt.eval()(src, hyp), model(src, hyp))
    assert model.config["family"] == "encoder_only"


def test_bad_settings_are_one_line_errors() -> None:
    with pytest.raises(UserError, match="outputs=0 must be a positive integer"):
        tiny_qe_model(outputs=0)
    with pytest.raises(UserError, match="n_heads=3 must divide d_model"):
        tiny_qe_model(n_heads=3)
