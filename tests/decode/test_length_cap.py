"""The output length limit never exceeds what the model's positions hold (max_positions - 1 tokens before
eos): a source near the input limit translates in every search and in the CTranslate2 export."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from decode_helpers import IDS, PAD
from tiny_models import WORDS, save_tiny_checkpoint, tiny_model, tiny_tokenizer

from seq2seq.decode.beam import beam_search
from seq2seq.decode.greedy import greedy_search
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.sampling import sampling_search
from seq2seq.errors import UserError
from seq2seq.inference.translator import Translator

MAX_POSITIONS = 12
NO_EOS = SearchOptions(min_len=20)  # over every capped limit: eos only where the length limit forces it


def model_with(positional: str, vocab: int = 12):
    return tiny_model(vocab, pad_id=PAD, positional=positional, max_positions=MAX_POSITIONS)


def longest_sources() -> torch.Tensor:
    """Two sources as long as the encoder's positions allow (eos included), one shorter."""
    src = torch.randint(4, 12, (3, MAX_POSITIONS), generator=torch.Generator().manual_seed(1))
    src[:, -1] = 3  # eos
    src[2, 5:] = PAD
    src[2, 4] = 3
    return src


@pytest.mark.parametrize("positional", ["learned", "sinusoidal", "rope"])
@pytest.mark.parametrize(
    "search",
    [
        lambda m, s, o: greedy_search(m, s, o, **IDS),
        lambda m, s, o: beam_search(m, s, o.replace(beam_size=3), **IDS),
        lambda m, s, o: sampling_search(m, s, o.replace(sampling=True, nbest=2), **IDS),
    ],
    ids=["greedy", "beam", "sampling"],
)
def test_outputs_stop_at_the_models_positions(positional, search):
    model = model_with(positional)
    results = search(model, longest_sources(), NO_EOS)
    best = [result[0] if isinstance(result, list) else result for result in results]  # greedy: one each
    # 1.2 * 12 + 10 = 24 tokens asked for the long sources, 1.2 * 5 + 10 = 16 for the short one
    assert [len(hypothesis.tokens) for hypothesis in best] == [MAX_POSITIONS - 1] * 3


def test_a_prefix_longer_than_the_positions_is_a_one_line_error():
    model = model_with("learned")
    with pytest.raises(UserError, match="does not fit the model's 12 positions"):
        greedy_search(model, longest_sources()[:1], NO_EOS, prefix=[5] * MAX_POSITIONS, **IDS)


def test_exported_model_caps_its_limit_like_ours(tmp_path: Path):
    pytest.importorskip("ctranslate2", reason="needs the export extra: pip install 'seq2seq[export]'")
    from seq2seq.export.ctranslate2 import export_ctranslate2

    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer.vocab_size, max_positions=MAX_POSITIONS)
    checkpoint = save_tiny_checkpoint(tmp_path / "model.pt", model, tokenizer, step=1)
    long_text = " ".join(WORDS * 3)  # truncated to the input limit, max_positions - 1 tokens
    ours = Translator.from_checkpoint(checkpoint, options=NO_EOS)
    theirs = Translator.from_checkpoint(export_ctranslate2(checkpoint, tmp_path / "ct2"), options=NO_EOS)
    source = ours.encode([long_text, "in the beginning"]).sources
    assert len(source[0]) == MAX_POSITIONS
    ours_tokens = [nbest[0].tokens for nbest in ours.search(source)]
    theirs_tokens = [nbest[0].tokens for nbest in theirs.search(source)]
    assert [len(tokens) for tokens in ours_tokens] == [MAX_POSITIONS - 1] * 2
    assert theirs_tokens == ours_tokens
