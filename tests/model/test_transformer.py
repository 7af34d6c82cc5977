"""Seq2Seq: cached decoding equals the full forward, padding invariance, checkpointing, cross-attention."""

from __future__ import annotations

import itertools

import pytest
import torch
from model_helpers import PAD, TOL, batch, make_model, padded
from torch.utils.checkpoint import checkpoint

from seq2seq.model import Seq2Seq, transformer

POSITIONAL = ["sinusoidal", "learned", "rope", "alibi"]


def decode_incrementally(
    model: Seq2Seq, src: torch.Tensor, tgt_in: torch.Tensor, chunk: int = 1
) -> torch.Tensor:
    """Logits of every target position computed through init_state / decode_step. Shapes: -> (B, T, V)."""
    state = model.init_state(model.encode(src))
    logits = []
    for start in range(0, tgt_in.shape[1], chunk):
        hidden = model.decoder.step(tgt_in[:, start : start + chunk], state)  # (B, chunk, D)
        logits.append(model.output(hidden))
    assert state.steps == tgt_in.shape[1]
    return torch.cat(logits, dim=1)


@pytest.mark.parametrize(
    "positional, window, cross_downsample, norm",
    list(itertools.product(POSITIONAL, [None, 3], [1, 2], ["pre", "post"])),
)
@torch.no_grad()
def test_cached_decoding_equals_full_forward(
    positional: str, window: int | None, cross_downsample: int, norm: str
) -> None:
    model = make_model(positional=positional, window=window, cross_downsample=cross_downsample, norm=norm)
    src, tgt_in = batch()
    full = model(src, tgt_in)  # T = 8 > 2W: the full pass uses blockwise local attention
    state = model.init_state(model.encode(src))
    for t in range(tgt_in.shape[1]):
        step_logits, state = model.decode_step(tgt_in[:, t : t + 1], state)
        assert step_logits.shape == (3, 23)
        torch.testing.assert_close(step_logits, full[:, t], **TOL)


@pytest.mark.parametrize("positional", POSITIONAL)
@pytest.mark.parametrize("window", [None, 3])
@torch.no_grad()
def test_decoding_two_tokens_at_a_time_equals_full_forward(positional: str, window: int | None) -> None:
    model = make_model(positional=positional, window=window, cross_downsample=2)
    src, tgt_in = batch(seed=1)
    torch.testing.assert_close(decode_incrementally(model, src, tgt_in, chunk=2), model(src, tgt_in), **TOL)


@pytest.mark.parametrize(
    "overrides",
    [
        {"positional": "alibi", "alibi_cross_attention": True, "cross_downsample": 2},
        {"downsample_mode": "conv", "cross_downsample": 3},
        {"activation": "swiglu", "attention_backend": "manual", "window": 2},
        {"sinusoid_layout": "fairseq", "position_offset": 2, "cross_downsample": 2},
        {"positional": "learned", "position_offset": 3, "window": 3},
        {"activation": "silu", "norm": "post", "output_bias": True, "scale_embeddings": False},
    ],
    ids=["alibi_cross", "conv_pooling", "swiglu_manual", "fairseq_offset", "learned_offset", "marian_like"],
)
@torch.no_grad()
def test_cached_decoding_other_options(overrides: dict) -> None:
    model = make_model(**overrides)
    if model.output.bias is not None:  # zeros at init: made random so that a path dropping it shows
        model.output.bias.copy_(torch.randn(model.output.bias.shape))
    src, tgt_in = batch(seed=2)
    torch.testing.assert_close(decode_incrementally(model, src, tgt_in), model(src, tgt_in), **TOL)


@pytest.mark.parametrize("positional", POSITIONAL)
@pytest.mark.parametrize("window", [None, 2])
@torch.no_grad()
def test_reorder_then_continue_equals_full_forward_of_permuted_batch(
    positional: str, window: int | None
) -> None:
    model = make_model(positional=positional, window=window, cross_downsample=2)
    src, tgt_in = batch(seed=3)
    index = torch.tensor([2, 0, 1])
    state = model.init_state(model.encode(src))
    for t in range(3):
        model.decode_step(tgt_in[:, t : t + 1], state)
    state.reorder(index)
    full = model(src[index], tgt_in[index])
    for t in range(3, tgt_in.shape[1]):
        step_logits, state = model.decode_step(tgt_in[index, t : t + 1], state)
        torch.testing.assert_close(step_logits, full[:, t], **TOL)


@torch.no_grad()
def test_beam_rows_repeat_their_sentence_and_survive_beam_reordering() -> None:
    model = make_model(positional="alibi", alibi_cross_attention=True, cross_downsample=2, window=3)
    src, tgt_in = batch(seed=4)
    beam = 3
    full = model(src, tgt_in)
    state = model.init_state(model.encode(src), beam_size=beam)
    assert state.batch_size == 3 * beam
    expanded = tgt_in.repeat_interleave(beam, 0)  # row b * beam + k is sentence b
    for t in range(4):
        step_logits, state = model.decode_step(expanded[:, t : t + 1], state)
        torch.testing.assert_close(step_logits, full[:, t].repeat_interleave(beam, 0), **TOL)
    # Permute hypotheses within each sentence only: the memory may be skipped.
    within = torch.tensor([2, 0, 1, 4, 4, 3, 8, 6, 7])
    state.reorder(within, memory=False)
    for t in range(4, tgt_in.shape[1]):
        step_logits, state = model.decode_step(expanded[:, t : t + 1], state)
        torch.testing.assert_close(step_logits, full[:, t].repeat_interleave(beam, 0), **TOL)


@pytest.mark.parametrize("how", ["drop_sentence", "any_rows"])
@torch.no_grad()
def test_beam_state_keeps_one_memory_per_sentence_through_reorders(how: str) -> None:
    """Beams share their sentence's memory row; dropping whole sentences or picking arbitrary rows
    keeps every hypothesis reading its own sentence's memory."""
    model = make_model(positional="alibi", alibi_cross_attention=True, cross_downsample=2)
    src, tgt_in = batch(seed=5)
    beam = 2
    full = model(src, tgt_in)  # (3, T, V)
    state = model.init_state(model.encode(src), beam_size=beam)
    assert state.memory_keep.shape[0] == 3 and state.batch_size == 3 * beam  # one memory per sentence
    expanded = tgt_in.repeat_interleave(beam, 0)
    for t in range(3):
        model.decode_step(expanded[:, t : t + 1], state)
    if how == "drop_sentence":  # sentence 1 finished: rows 2, 3 go, memory row 1 goes
        sentences = torch.tensor([0, 0, 2, 2])
        state.reorder(torch.tensor([1, 0, 4, 5]), memory=torch.tensor([0, 2]))
        assert state.memory_keep.shape[0] == 2 and state.group == beam
    else:  # any rows, across sentences: the memory is expanded to one row per hypothesis
        sentences = torch.tensor([2, 0, 1])
        state.reorder(torch.tensor([5, 0, 3]))
        assert state.memory_keep.shape[0] == 3 and state.group == 1
    for t in range(3, tgt_in.shape[1]):
        step_logits, state = model.decode_step(tgt_in[sentences, t : t + 1], state)
        torch.testing.assert_close(step_logits, full[sentences, t], **TOL)


@pytest.mark.parametrize("positional", POSITIONAL)
@pytest.mark.parametrize("window", [None, 2])
@pytest.mark.parametrize("cross_downsample", [1, 2])
@torch.no_grad()
def test_extra_padding_does_not_change_real_logits(
    positional: str, window: int | None, cross_downsample: int
) -> None:
    model = make_model(positional=positional, window=window, cross_downsample=cross_downsample)
    src, tgt_in = batch(seed=5)
    logits = model(src, tgt_in)
    more_src = torch.cat([src, torch.full((3, 6), PAD)], dim=1)
    more_tgt = torch.cat([tgt_in, torch.full((3, 5), PAD)], dim=1)
    torch.testing.assert_close(model(more_src, more_tgt)[:, : tgt_in.shape[1]], logits, **TOL)
    memory, more_memory = model.encode(src), model.encode(more_src)
    assert torch.equal(more_memory.keep[:, : src.shape[1]], memory.keep) and not more_memory.keep[:, 9:].any()
    torch.testing.assert_close(
        more_memory.states[:, : src.shape[1]][memory.keep], memory.states[memory.keep], **TOL
    )


@pytest.mark.parametrize("positional", POSITIONAL)
@pytest.mark.parametrize("window", [None, 2])
@torch.no_grad()
def test_sentence_alone_equals_sentence_in_padded_batch(positional: str, window: int | None) -> None:
    model = make_model(positional=positional, window=window, cross_downsample=2)
    src = padded([11, 4, 7], 11, seed=6)
    tgt_in = padded([10, 3, 6], 10, seed=7)
    batched_memory = model.encode(src)
    batched = model(src, tgt_in)
    for row, (s_len, t_len) in enumerate([(11, 10), (4, 3), (7, 6)]):
        alone_src, alone_tgt = src[row : row + 1, :s_len], tgt_in[row : row + 1, :t_len]
        torch.testing.assert_close(
            model.encode(alone_src).states[0], batched_memory.states[row, :s_len], **TOL
        )
        torch.testing.assert_close(model(alone_src, alone_tgt)[0], batched[row, :t_len], **TOL)


@pytest.mark.parametrize("positional", POSITIONAL)
@torch.no_grad()
def test_long_prefix_then_single_steps_with_a_window(positional: str) -> None:
    # The 7-token prefix (> 2W) runs blockwise local attention; later steps attend to a sliced cache.
    model = make_model(positional=positional, window=3, cross_downsample=2)
    src, tgt_in = padded([9, 6, 3], 9, seed=10), padded([12, 12, 12], 12, seed=11)
    full = model(src, tgt_in)
    state = model.init_state(model.encode(src))
    prefix = model.output(model.decoder.step(tgt_in[:, :7], state))  # (B, 7, V)
    torch.testing.assert_close(prefix, full[:, :7], **TOL)
    for t in range(7, 12):
        step_logits, state = model.decode_step(tgt_in[:, t : t + 1], state)
        torch.testing.assert_close(step_logits, full[:, t], **TOL)


@torch.no_grad()
def test_learned_positions_past_the_limit_raise_during_decoding() -> None:
    model = make_model(positional="learned", max_positions=9)
    src, tgt_in = batch(seed=12)  # src fills positions 0..8
    state = model.init_state(model.encode(src))
    model.decode_step(tgt_in, state)  # target positions 0..7
    model.decode_step(tgt_in[:, :1], state)  # position 8, the last one
    with pytest.raises(ValueError, match="max_positions=9"):
        model.decode_step(tgt_in[:, :1], state)


def loss_and_grads(model: Seq2Seq, src: torch.Tensor, tgt_in: torch.Tensor, seed: int) -> tuple:
    torch.manual_seed(seed)
    model.zero_grad()
    logits = model(src, tgt_in)
    loss = torch.nn.functional.cross_entropy(
        logits.flatten(0, 1), tgt_in.roll(-1, 1).flatten(), ignore_index=PAD
    )
    loss.backward()
    return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters()}


@pytest.mark.parametrize("dropout", [0.0, 0.3])
@pytest.mark.parametrize(
    "overrides", [{}, {"positional": "alibi", "window": 2, "norm": "post"}], ids=["default", "alibi_window"]
)
def test_gradient_checkpointing_gives_identical_loss_and_gradients(
    dropout: float, overrides: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def counting_checkpoint(*args, **kwargs):
        calls.append(1)
        return checkpoint(*args, **kwargs)

    monkeypatch.setattr(transformer, "checkpoint", counting_checkpoint)
    src, tgt_in = batch(seed=8)
    dropouts = {"dropout": dropout, "attention_dropout": dropout, "activation_dropout": dropout}
    plain = make_model(**dropouts, **overrides).train()
    checkpointed = make_model(**dropouts, checkpoint_activations=True, **overrides).train()
    checkpointed.load_state_dict(plain.state_dict())
    loss, grads = loss_and_grads(plain, src, tgt_in, seed=123)
    assert not calls
    checkpointed_loss, checkpointed_grads = loss_and_grads(checkpointed, src, tgt_in, seed=123)
    assert len(calls) == 4  # every encoder and decoder layer
    torch.testing.assert_close(checkpointed_loss, loss, rtol=1e-6, atol=1e-6)
    assert grads.keys() == checkpointed_grads.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(checkpointed_grads[name], grad, rtol=1e-6, atol=1e-6, msg=name)
    if dropout:  # dropout really is active: another seed gives another loss
        other_loss, _ = loss_and_grads(plain, src, tgt_in, seed=124)
        assert (other_loss - loss).abs() > 1e-4


@pytest.mark.parametrize("cross_downsample", [1, 2])
def test_cross_attention_rows_sum_to_one_over_real_source_positions(cross_downsample: int) -> None:
    model = make_model(cross_downsample=cross_downsample, positional="alibi", alibi_cross_attention=True)
    src, tgt_in = batch(seed=9)
    pooled_keep = model.init_state(model.encode(src)).memory_keep  # (B, S')
    for layer in (0, -1):
        probs = model.cross_attention(src, tgt_in, layer=layer)
        heads = model.config["n_heads"]
        assert probs.shape == (3, heads, 8, pooled_keep.shape[1])
        torch.testing.assert_close(probs.sum(-1), torch.ones(3, heads, 8), **TOL)
        pad = ~pooled_keep[:, None, None, :].expand_as(probs)
        assert pad.any() and torch.equal(probs[pad], torch.zeros(int(pad.sum())))
        assert (probs[~pad] > 0).all()
