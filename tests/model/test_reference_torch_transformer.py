"""The `tiny` model equals torch.nn.Transformer given the same weights and the same embedded inputs."""

from __future__ import annotations

import math

import pytest
import torch
from model_helpers import PAD, padded
from torch import nn

from seq2seq.model import Seq2Seq, build_model, model_size

VOCAB = 31


def copy_linear(target: nn.Linear | nn.LayerNorm, source: nn.Linear | nn.LayerNorm) -> None:
    target.weight.copy_(source.weight)
    target.bias.copy_(source.bias)


def copy_attention(
    target: nn.MultiheadAttention, weight: torch.Tensor, bias: torch.Tensor, out: nn.Linear
) -> None:
    target.in_proj_weight.copy_(weight)  # rows: q, k, v
    target.in_proj_bias.copy_(bias)
    copy_linear(target.out_proj, out)


@torch.no_grad()
def torch_transformer_with_our_weights(ours: Seq2Seq, *, norm_first: bool) -> nn.Transformer:
    tiny = model_size("tiny")
    d_model, heads, ffn = tiny["d_model"], tiny["n_heads"], tiny["ffn_dim"]
    layer_args = {"dim_feedforward": ffn, "dropout": 0.0, "batch_first": True, "norm_first": norm_first}
    if norm_first:  # torch's default final LayerNorms play the role of our final_norm
        reference = nn.Transformer(
            d_model, heads, tiny["encoder_layers"], tiny["decoder_layers"], **layer_args
        )
        copy_linear(reference.encoder.norm, ours.encoder.final_norm)
        copy_linear(reference.decoder.norm, ours.decoder.final_norm)
    else:  # post-norm: no final norms
        encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d_model, heads, **layer_args),
            tiny["encoder_layers"],
            norm=None,
            enable_nested_tensor=False,
        )
        decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(d_model, heads, **layer_args), tiny["decoder_layers"], norm=None
        )
        reference = nn.Transformer(
            d_model,
            heads,
            tiny["encoder_layers"],
            tiny["decoder_layers"],
            ffn,
            dropout=0.0,
            batch_first=True,
            custom_encoder=encoder,
            custom_decoder=decoder,
        )
    for theirs, mine in zip(reference.encoder.layers, ours.encoder.layers):
        copy_attention(
            theirs.self_attn, mine.self_attn.qkv.weight, mine.self_attn.qkv.bias, mine.self_attn.out
        )
        copy_linear(theirs.linear1, mine.ffn.up)
        copy_linear(theirs.linear2, mine.ffn.down)
        copy_linear(theirs.norm1, mine.attn_block.norm)
        copy_linear(theirs.norm2, mine.ffn_block.norm)
    for theirs, mine in zip(reference.decoder.layers, ours.decoder.layers):
        copy_attention(
            theirs.self_attn, mine.self_attn.qkv.weight, mine.self_attn.qkv.bias, mine.self_attn.out
        )
        cross = mine.cross_attn
        copy_attention(
            theirs.multihead_attn,
            torch.cat([cross.q.weight, cross.kv.weight]),
            torch.cat([cross.q.bias, cross.kv.bias]),
            cross.out,
        )
        copy_linear(theirs.linear1, mine.ffn.up)
        copy_linear(theirs.linear2, mine.ffn.down)
        copy_linear(theirs.norm1, mine.self_block.norm)
        copy_linear(theirs.norm2, mine.cross_block.norm)
        copy_linear(theirs.norm3, mine.ffn_block.norm)
    return reference.eval()


def embed_by_hand(ours: Seq2Seq, tokens: torch.Tensor) -> torch.Tensor:
    """Token embedding * sqrt(D) + the paper's sinusoids (sines first half, cosines second half)."""
    d_model = ours.decoder.embedding.weight.shape[1]
    half = d_model // 2
    angles = torch.arange(tokens.shape[1], dtype=torch.float32)[:, None] / 10000 ** (
        torch.arange(half, dtype=torch.float32)[None, :] * 2 / d_model
    )  # (T, D/2)
    positions = torch.cat([angles.sin(), angles.cos()], dim=-1)  # (T, D)
    return ours.decoder.embedding.weight[tokens] * math.sqrt(d_model) + positions


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_tiny_matches_torch_nn_transformer(norm: str) -> None:
    torch.manual_seed(0)
    ours = build_model(
        src_vocab_size=VOCAB,
        tgt_vocab_size=VOCAB,
        pad_id=PAD,
        dropout=0.0,
        activation="relu",
        positional="sinusoidal",
        norm=norm,
        **model_size("tiny"),
    ).eval()
    with torch.no_grad():  # random biases and norm gains, so a mis-copied tensor cannot hide
        for name, parameter in ours.named_parameters():
            if "embedding" not in name:
                parameter.add_(0.2 * torch.randn_like(parameter))
    reference = torch_transformer_with_our_weights(ours, norm_first=norm == "pre")

    src = padded([9, 6, 3], 9, seed=1)
    tgt_in = padded([7, 4, 7], 7, seed=2)
    src_keep, tgt_keep = src != PAD, tgt_in != PAD
    src_embedded, tgt_embedded = embed_by_hand(ours, src), embed_by_hand(ours, tgt_in)
    torch.testing.assert_close(src_embedded, ours.encoder._embed(src, torch.arange(9)), rtol=1e-6, atol=1e-6)

    causal = nn.Transformer.generate_square_subsequent_mask(7)  # (T, T), -inf above the diagonal
    memory = reference.encoder(src_embedded, src_key_padding_mask=~src_keep)  # torch: True = padding
    hidden = reference.decoder(
        tgt_embedded, memory, tgt_mask=causal, tgt_is_causal=True, memory_key_padding_mask=~src_keep
    )
    expected = ours.output(hidden)

    our_memory = ours.encode(src)
    torch.testing.assert_close(our_memory.states[src_keep], memory[src_keep], rtol=1e-5, atol=1e-5)
    logits = ours(src, tgt_in)
    torch.testing.assert_close(logits[tgt_keep], expected[tgt_keep], rtol=1e-5, atol=1e-5)
    # The whole-model call agrees too.
    whole = reference(
        src_embedded,
        tgt_embedded,
        tgt_mask=causal,
        src_key_padding_mask=~src_keep,
        memory_key_padding_mask=~src_keep,
        tgt_is_causal=True,
    )
    torch.testing.assert_close(ours.output(whole)[tgt_keep], logits[tgt_keep], rtol=1e-5, atol=1e-5)
