"""The decoder-only family: cached decoding equals the full forward, padding changes nothing, the prefix LM
sees its source both ways, the loss covers what it should, and what the family cannot do is refused.

The reference throughout is the model run on one unpadded sequence `source <tag> target`, built by
hand here: the left-padded batch layout of seq2seq/model/decoder_only.py must give exactly its result.
"""

from __future__ import annotations

from functools import partial

import pytest
import torch
import torch.nn.functional as F
from tiny_models import tiny_decoder_only, tiny_model

from seq2seq.decode.beam import beam_search
from seq2seq.decode.ensemble import Ensemble
from seq2seq.decode.greedy import greedy_search
from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.model import build_decoder_only, build_from_config, family_of
from seq2seq.model.decoder_only import left_pad
from seq2seq.train.loss import projected_label_smoothed_nll
from seq2seq.train.objective import TrainingLoss, batch_loss

PAD, BOS, EOS, VOCAB = 0, 1, 2, 29
IDS = SpecialIds(bos=BOS, eos=EOS, pad=PAD)
TOL = {"rtol": 1e-5, "atol": 2e-5}
SCHEMES = ["sinusoidal", "learned", "rope", "alibi"]


def model(positional: str = "sinusoidal", prefix_lm: bool = False, **overrides):
    settings = {"max_positions": 64, **overrides}
    return tiny_decoder_only(VOCAB, pad_id=PAD, positional=positional, prefix_lm=prefix_lm, **settings)


def rows(lengths: list[int], *, seed: int, end: int | None = None) -> list[list[int]]:
    """Random sentences of real tokens (ids 3..), each ending in `end` when given."""
    gen = torch.Generator().manual_seed(seed)
    out = [torch.randint(3, VOCAB, (n,), generator=gen).tolist() for n in lengths]
    return [r[:-1] + [end] for r in out] if end is not None else out


def right_padded(sequences: list[list[int]]) -> torch.Tensor:
    width = max(map(len, sequences))
    return torch.tensor([s + [PAD] * (width - len(s)) for s in sequences])


def reference_logits(net, source: list[int], tgt_in: list[int]) -> torch.Tensor:
    """Logits of one unpadded `source tgt_in` sequence, through the stack by hand. Shapes: -> (L, V)."""
    tokens = torch.tensor([source + tgt_in])  # (1, L)
    length = tokens.shape[1]
    columns = torch.arange(length)
    stack = net.stack
    x = stack._embed(tokens, columns)
    context = stack.positions.self_context(keep=None, causal=True, prefix=len(source) if net.prefix_lm else 0,
                                           q_positions=columns, k_positions=columns)  # fmt: skip
    for layer in stack.layers:
        x = layer(x, context)
    return net.output(stack.final_norm(x))[0]


SOURCES = rows([6, 3, 9], seed=1, end=EOS)
TARGETS_IN = [[BOS] + r for r in rows([4, 7, 2], seed=2)]


@pytest.mark.parametrize("prefix_lm", [False, True], ids=["causal", "prefix_lm"])
@pytest.mark.parametrize("positional", SCHEMES)
def test_padded_batch_equals_each_sequence_alone(positional: str, prefix_lm: bool) -> None:
    net = model(positional, prefix_lm)
    with torch.no_grad():
        batched = net(right_padded(SOURCES), right_padded(TARGETS_IN))  # (B, T, V)
        for row, (source, tgt_in) in enumerate(zip(SOURCES, TARGETS_IN)):
            alone = reference_logits(net, source, tgt_in)[len(source) :]  # the target part
            torch.testing.assert_close(batched[row, : len(tgt_in)], alone, **TOL)


@pytest.mark.parametrize("window", [None, 3])
@pytest.mark.parametrize("prefix_lm", [False, True], ids=["causal", "prefix_lm"])
@pytest.mark.parametrize("positional", SCHEMES)
def test_cached_incremental_decoding_equals_full_forward(positional: str, prefix_lm: bool, window) -> None:
    net = model(positional, prefix_lm, window=window)
    src, tgt_in = right_padded(SOURCES), right_padded([t[:3] for t in TARGETS_IN])  # (3, 9), (3, 3)
    with torch.no_grad():
        full = net(src, tgt_in)  # (B, T, V)
        state = net.init_state(net.encode(src), beam_size=1, max_steps=4)
        steps = [net.decode_step(tgt_in[:, t : t + 1], state)[0] for t in range(tgt_in.shape[1])]
    torch.testing.assert_close(torch.stack(steps, dim=1), full, **TOL)


SETTINGS = [
    {"position_offset": 2},
    {"position_offset": 3, "positional": "learned"},
    {"sinusoid_layout": "fairseq", "position_offset": 2},
    {"activation": "silu", "norm": "post", "output_bias": True},
    {"scale_embeddings": False, "output_bias": True, "share_decoder_output": False},
]


def with_settings(prefix_lm: bool, settings: dict):
    """The tiny decoder-only model with `settings`, its output bias (zeros at init) made random."""
    net = model(prefix_lm=prefix_lm, **settings)
    if net.output.bias is not None:
        with torch.no_grad():
            net.output.bias.copy_(torch.randn(VOCAB, generator=torch.Generator().manual_seed(3)))
    return net


@pytest.mark.parametrize("prefix_lm", [False, True], ids=["causal", "prefix_lm"])
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_the_model_settings_keep_padding_invariance_and_cached_decoding(
    settings: dict, prefix_lm: bool
) -> None:
    net = with_settings(prefix_lm, settings)
    src, tgt_in = right_padded(SOURCES), right_padded(TARGETS_IN)
    with torch.no_grad():
        full = net(src, tgt_in)  # (B, T, V)
        for row, (source, target_in) in enumerate(zip(SOURCES, TARGETS_IN)):
            alone = reference_logits(net, source, target_in)[len(source) :]
            torch.testing.assert_close(full[row, : len(target_in)], alone, **TOL)
        state = net.init_state(net.encode(src), beam_size=1, max_steps=tgt_in.shape[1])
        steps = [net.decode_step(tgt_in[:, t : t + 1], state)[0] for t in range(tgt_in.shape[1])]
    real = tgt_in != PAD  # (B, T): a padded target's later steps feed pads, which the full pass masks
    torch.testing.assert_close(torch.stack(steps, dim=1)[real], full[real], **TOL)
    if net.output.bias is not None:
        hidden = net(src, tgt_in, project=False)  # (B, T, D)
        torch.testing.assert_close(full, hidden @ net.output.weight.T + net.output.bias, **TOL)


@pytest.mark.parametrize("layout", ["standard", "fairseq"])
def test_an_offset_shifts_each_rows_absolute_positions(layout: str) -> None:
    """A row's first real source token sits at position `offset` (left padding does not move it)."""
    from seq2seq.nn.positional import sinusoid_table

    net = model(sinusoid_layout=layout, position_offset=2)
    twin = model(sinusoid_layout=layout)  # the same weights (seed), counting from 0
    table = sinusoid_table(torch.arange(2, 66), 64, layout)  # (64, D): column t holds position t + 2

    class Shifted(torch.nn.Module):
        def forward(self, positions: torch.Tensor) -> torch.Tensor:
            return table[positions]

    twin.stack.positions.absolute = Shifted()
    with torch.no_grad():
        ours = net(right_padded(SOURCES), right_padded(TARGETS_IN))
        torch.testing.assert_close(ours, twin(right_padded(SOURCES), right_padded(TARGETS_IN)), **TOL)
        assert not torch.allclose(
            ours, model(sinusoid_layout=layout)(right_padded(SOURCES), right_padded(TARGETS_IN))
        )


def test_beam_rows_start_from_their_sentence_source() -> None:
    net = model("rope")
    src = right_padded(SOURCES)
    with torch.no_grad():
        state = net.init_state(net.encode(src), beam_size=2, max_steps=4)
        first = net.decode_step(torch.full((6, 1), BOS), state)[0]  # (B * 2, V)
        alone = torch.stack([reference_logits(net, s, [BOS])[-1] for s in SOURCES])
    torch.testing.assert_close(first, alone.repeat_interleave(2, dim=0), **TOL)


def test_prefix_lm_source_sees_later_source_tokens_and_causal_does_not() -> None:
    """Changing the last source token changes an earlier source position's state only in the prefix LM."""
    for prefix_lm, changes in ((False, False), (True, True)):
        net = model("sinusoidal", prefix_lm)
        source = SOURCES[0]
        edited = source[:-2] + [(source[-2] % (VOCAB - 3)) + 3 if source[-2] != VOCAB - 1 else 3, EOS]
        with torch.no_grad():
            before = reference_logits(net, source, [BOS])[0]
            after = reference_logits(net, edited, [BOS])[0]
        assert (not torch.allclose(before, after)) is changes


def test_left_pad_moves_tokens_to_the_right_end() -> None:
    moved, keep = left_pad(torch.tensor([[5, 6, 2], [7, 2, 0], [2, 0, 0]]), PAD)
    assert moved.tolist() == [[5, 6, 2], [0, 7, 2], [0, 0, 2]]
    assert keep.tolist() == [[True, True, True], [False, True, True], [False, False, True]]


@pytest.mark.parametrize("prefix_lm", [False, True], ids=["causal", "prefix_lm"])
def test_beam_size_one_equals_greedy(prefix_lm: bool) -> None:
    net = tiny_decoder_only(VOCAB, pad_id=PAD, sharpness=4.0, prefix_lm=prefix_lm, seed=3)
    src = right_padded(rows([5, 8, 3, 6], seed=4, end=EOS))
    options = SearchOptions(beam_size=1, max_len_a=0.0, max_len_b=12)
    greedy = greedy_search(net, src, options, ids=IDS)
    beam = beam_search(net, src, options, ids=IDS)
    assert [h.tokens for h in greedy] == [b[0].tokens for b in beam]
    assert [round(h.log_prob, 4) for h in greedy] == [round(b[0].log_prob, 4) for b in beam]


def test_output_room_counts_the_source() -> None:
    net = model(max_positions=12)
    src = right_padded([[5, 6, 7, EOS], [5, EOS]])
    assert net.output_room(src).tolist() == [7, 9]  # 12 positions - source - the tag
    results = greedy_search(net, src, SearchOptions(max_len_a=0.0, max_len_b=50), ids=IDS)
    assert [len(h.tokens) for h in results] == [7, 9]  # near-uniform tiny model: eos comes late
    with pytest.raises(UserError, match="no room for output"):
        greedy_search(net, right_padded([[5] * 12 + [EOS]]), SearchOptions(), ids=IDS)


def loss_fn(source_weight: float) -> TrainingLoss:
    return TrainingLoss(
        partial(projected_label_smoothed_nll, epsilon=0.1, pad_id=PAD), source_weight=source_weight
    )


def reference_loss(net, sources, targets, source_weight: float) -> torch.Tensor:
    """Summed label-smoothed CE over target tokens (+ weight x over source tokens 2..n), row by row."""
    total = torch.zeros(())
    for source, target in zip(sources, targets):
        logits = reference_logits(net, source, [BOS] + target[:-1])  # (S + T, V)
        target_part = logits[len(source) :]  # the tag's and the target tokens' positions
        total = total + F.cross_entropy(
            target_part, torch.tensor(target), label_smoothing=0.1, reduction="sum"
        )
        if source_weight:
            source_part = logits[: len(source) - 1]  # predicts source tokens 2..n
            total = total + source_weight * F.cross_entropy(
                source_part, torch.tensor(source[1:]), label_smoothing=0.1, reduction="sum"
            )
    return total


@pytest.mark.parametrize("source_weight", [0.0, 0.3])
def test_loss_and_gradients_equal_the_per_sequence_reference(source_weight: float) -> None:
    """With source_weight=0 the source tokens are inputs only: no term, no gradient from predicting them."""
    from seq2seq.data.collate import collate

    targets = [r + [EOS] for r in rows([4, 7, 2], seed=5)]
    batch = collate(list(zip(SOURCES, targets)), pad_id=PAD, bos_id=BOS, eos_id=EOS)
    net = model("learned")
    net.train()  # dropout is 0: train mode changes nothing but the code path
    ours = batch_loss(net, batch, loss_fn(source_weight), pad_id=PAD).loss_sum
    ours_grads = torch.autograd.grad(ours, list(net.parameters()))
    reference = reference_loss(net, SOURCES, targets, source_weight)
    reference_grads = torch.autograd.grad(reference, list(net.parameters()))
    torch.testing.assert_close(ours, reference, rtol=1e-5, atol=1e-4)
    for mine, theirs in zip(ours_grads, reference_grads):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-5)


def test_source_weight_changes_the_loss_only_through_the_source_term() -> None:
    from seq2seq.data.collate import collate

    targets = [r + [EOS] for r in rows([4, 7, 2], seed=5)]
    batch = collate(list(zip(SOURCES, targets)), pad_id=PAD, bos_id=BOS, eos_id=EOS)
    net = model()
    with torch.no_grad():
        plain = batch_loss(net, batch, loss_fn(0.0), pad_id=PAD)
        weighted = batch_loss(net, batch, loss_fn(0.5), pad_id=PAD)
    assert weighted.loss_sum > plain.loss_sum
    assert weighted.nll_sum == plain.nll_sum and weighted.n_tokens == plain.n_tokens  # reported: target only


def test_gradient_checkpointing_gives_identical_gradients() -> None:
    targets = [[BOS] + r for r in rows([4, 7, 2], seed=5)]
    grads = []
    for checkpointing in (False, True):
        net = model("rope", checkpoint_activations=checkpointing).train()
        net(right_padded(SOURCES), right_padded(targets)).sum().backward()
        grads.append([p.grad.clone() for p in net.parameters()])
    for plain, checkpointed in zip(*grads):
        torch.testing.assert_close(plain, checkpointed)


def test_family_is_recorded_and_rebuilds_the_same_model() -> None:
    net = model("alibi", prefix_lm=True)
    assert net.config["family"] == "decoder_only" and family_of(net.config) == "decoder_only"
    rebuilt = build_from_config(net.config)
    rebuilt.load_state_dict(net.state_dict())
    assert rebuilt.prefix_lm and type(rebuilt) is type(net)
    encoder_decoder = tiny_model(VOCAB)
    assert family_of(encoder_decoder.config) == "encoder_decoder"
    assert family_of({k: v for k, v in encoder_decoder.config.items() if k != "family"}) == "encoder_decoder"
    with pytest.raises(UserError, match="model family 'diffusion' is not known"):
        family_of({"family": "diffusion"})


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"cross_downsample": 2}, "cross_downsample=2 pools the encoder memory for cross-attention"),
        ({"tgt_vocab_size": VOCAB + 1}, "needs one joint vocabulary"),
        ({"layers": 0}, "layers=0 must be a positive integer"),
        ({"positional": "relative"}, "positional='relative' is not supported"),
        ({"position_offset": -2}, "position_offset=-2 must be a non-negative integer"),
        (
            {"sinusoid_layout": "fairseq", "positional": "alibi"},
            "sinusoid_layout='fairseq' shapes sinusoidal",
        ),
        ({"output_bias": "no"}, "output_bias='no' must be true or false"),
    ],
)
def test_impossible_settings_are_one_line_errors(overrides: dict, message: str) -> None:
    arguments = {"src_vocab_size": VOCAB, "tgt_vocab_size": VOCAB, **overrides}
    with pytest.raises(UserError, match=message) as raised:
        build_decoder_only(**arguments)
    assert "\n" not in str(raised.value)


def test_source_language_model_needs_a_causal_model() -> None:
    with pytest.raises(UserError, match="needs a causal model"):
        model(prefix_lm=True)(right_padded(SOURCES), right_padded(TARGETS_IN), source_lm=True)


def test_ensembles_refuse_mixed_families() -> None:
    with pytest.raises(UserError, match="must be of one family, got decoder_only and encoder_decoder"):
        Ensemble([model(), tiny_model(VOCAB)])


def test_ensemble_of_decoder_only_models_searches() -> None:
    first, second = (tiny_decoder_only(VOCAB, pad_id=PAD, seed=s, sharpness=4.0) for s in (1, 2))
    ensemble = Ensemble([first, second]).eval()
    src = right_padded(rows([5, 3], seed=6, end=EOS))
    assert all(r[0].tokens for r in beam_search(ensemble, src, SearchOptions(beam_size=3), ids=IDS))
    greedy = greedy_search(ensemble, src, SearchOptions(beam_size=1, max_len_b=8), ids=IDS)
    with torch.no_grad():  # the first step's scores are the mean of the members' log-probabilities
        step = [
            m.decode_step(torch.full((2, 1), BOS), m.init_state(m.encode(src)))[0] for m in (first, second)
        ]
    mean = torch.stack([s.log_softmax(-1) for s in step]).mean(0)  # (2, V)
    mean[:, [PAD, BOS]] = float("-inf")
    assert [h.tokens[0] if h.tokens else EOS for h in greedy] == mean.argmax(-1).tolist()
    torch.testing.assert_close(torch.tensor([h.positional_scores[0] for h in greedy]), mean.max(-1).values)
