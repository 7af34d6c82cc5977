"""Vocabulary shortlists (seq2seq.decode.shortlist): the lexical table of a small fixed corpus is exactly
the Dice ranking worked out by hand; a batch's candidates are its rows, the frequent tokens, the special
ids and its prefixes' tokens; a shortlist that holds every token the full-vocabulary search picks gives
the same greedy output (and, on a sharp model, the same beam output), for one model and an ensemble, in
float32 and int8; threads sharing one engine each get their own candidates; a shortlist refuses another
model's tokenizers; seq2seq-shortlist writes one from text files and seq2seq-translate shortlist= uses it."""

from __future__ import annotations

import contextlib
import importlib
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from commands import error_line, run_module
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq.decode.common import SpecialIds
from seq2seq.decode.engines import TorchEngine
from seq2seq.decode.ensemble import Ensemble
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.shortlist import Shortlist, build_shortlist, restricted
from seq2seq.decode.translator import Translator
from seq2seq.errors import UserError
from seq2seq.nn.quantized import int8_available, quantize_int8

search_module = importlib.import_module("seq2seq.decode.search")  # the package exports a function `search`
LIMIT = SearchOptions(max_len_a=0.0, max_len_b=10)
DIGESTS = ("a", "b")


def test_the_table_ranks_by_dice_and_keeps_the_most_frequent_targets() -> None:
    # counts are of sentence pairs: c(5) = 2, c(6) = 2, c(7) = 2, c(4) = 4, c(8) = 1
    pairs = [([5, 6], [7, 4]), ([5], [7, 4, 4]), ([6], [8, 4]), ([9], [4])]
    shortlist = build_shortlist(pairs, src_vocab_size=10, tgt_vocab_size=10, per_source=2, frequent=1,
                                always=(3, 1), digests=DIGESTS)  # fmt: skip
    assert shortlist.table[5].tolist() == [7, 4]  # 7: 2*2/(2+2) = 1; 4: 2*2/(2+4) = 0.67
    assert shortlist.table[6].tolist() == [4, 8]  # 4: 2*2/(2+4), 8: 2*1/(2+1), a tie: lower id first; 7: 0.5
    assert shortlist.table[9].tolist() == [4, -1]  # one target ever: the row is padded with -1
    assert shortlist.table[0].tolist() == [-1, -1]  # never seen
    assert shortlist.frequent.tolist() == [4]  # five occurrences
    src = torch.tensor([[9, 0, 0]])  # (B, S) with padding
    assert shortlist.candidates(src).tolist() == [1, 3, 4]
    assert shortlist.candidates(src, prefixes=[[8, 2]]).tolist() == [1, 2, 3, 4, 8]


def test_empty_text_and_bad_sizes_are_errors() -> None:
    with pytest.raises(UserError, match="holds no sentence pairs"):
        build_shortlist(
            [], src_vocab_size=4, tgt_vocab_size=4, per_source=2, frequent=1, always=(), digests=DIGESTS
        )
    with pytest.raises(UserError, match="per_source must be at least 1"):
        build_shortlist([([1], [1])], src_vocab_size=4, tgt_vocab_size=4, per_source=0, frequent=1, always=(),
                        digests=DIGESTS)  # fmt: skip


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


def covering(reference: list[list[int]], vocab: int, extra: int = 0) -> Shortlist:
    """A shortlist whose every row holds the tokens of `reference` (plus `extra` other ids): it contains
    every token the full search picked, and leaves the rest of the vocabulary out."""
    tokens = sorted({token for tokens in reference for token in tokens} | set(range(4, 4 + extra)))
    table = torch.tensor([tokens] * vocab, dtype=torch.int32)
    return Shortlist(table, torch.zeros(0, dtype=torch.int32), torch.tensor([1, 3], dtype=torch.int32), vocab,
                     DIGESTS)  # fmt: skip


@pytest.mark.parametrize("kind", ["single", "ensemble", "int8"])
@pytest.mark.parametrize("beam", [1, 4])
def test_a_shortlist_holding_the_outputs_tokens_gives_the_same_output(tokenizer, kind, beam) -> None:
    if kind == "int8" and not int8_available():
        pytest.skip("this PyTorch build has no dynamic int8 kernels")
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=64)
    if kind == "ensemble":
        model = Ensemble([model, tiny_model(tokenizer.vocab_size, seed=1, sharpness=4.0, max_positions=64)])
    if kind == "int8":
        model = quantize_int8(model)
    ids = SpecialIds.of(tokenizer)
    options = SearchOptions(beam_size=beam, nbest=beam, max_len_a=0.0, max_len_b=10)
    sources = [tokenizer.encode(text) + [ids.eos] for text in sentences(6, seed=5)]

    def search(shortlist):
        engine = TorchEngine(model, ids, device=torch.device("cpu"), precision="fp32", shortlist=shortlist)
        return engine.search(sources, options, max_tokens=4096)

    full = search(None)
    picked = [list(h.tokens) for nbest in full for h in nbest]
    shortlist = covering(picked, tokenizer.vocab_size, extra=3)
    assert len(shortlist.candidates(torch.tensor(sources[0])[None])) < tokenizer.vocab_size - 10
    ours = search(shortlist)
    assert [[h.tokens for h in nbest][:1] for nbest in ours] == [
        [h.tokens for h in nbest][:1] for nbest in full
    ]


def test_restricted_gives_minus_infinity_outside_the_candidates_and_restores_the_model(tokenizer) -> None:
    model = tiny_model(tokenizer.vocab_size)
    projection = model.output
    candidates = torch.tensor([1, 3, 7, 9])
    hidden = torch.randn(2, 5, model.output.weight.shape[1])  # (B, T, D)
    with torch.no_grad(), restricted(model, candidates):
        logits = model.output(hidden)  # (B, T, V)
    assert model.output is projection
    expected = projection(hidden)
    torch.testing.assert_close(logits[..., candidates], expected[..., candidates])
    others = torch.ones(tokenizer.vocab_size, dtype=torch.bool)
    others[candidates] = False
    assert torch.isneginf(logits[..., others]).all()


def test_a_shortlist_for_other_tokenizers_is_refused_and_the_command_round_trips(tokenizer, tmp_path) -> None:
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=64)
    checkpoint = save_tiny_checkpoint(tmp_path / "model.pt", model, tokenizer, step=1)
    texts = sentences(30, seed=6)
    (tmp_path / "train.src").write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    (tmp_path / "train.tgt").write_text("".join(t.upper() + "\n" for t in texts), encoding="utf-8")
    settings = [
        f"checkpoint={checkpoint}",
        "source=train.src",
        "target=train.tgt",
        "output=sl.pt",
        "per_source=3",
    ]
    result = run_module("seq2seq.cli.shortlist", *settings, "frequent=5", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    translator = Translator.from_checkpoint(checkpoint, options=LIMIT, shortlist=tmp_path / "sl.pt")
    assert translator.engine.shortlist.table.shape == (tokenizer.vocab_size, 3)
    full = Translator.from_checkpoint(checkpoint, options=LIMIT)
    assert len(translator.translate(texts[:3], beam_size=1)) == len(full.translate(texts[:3], beam_size=1))

    src_model = tokenizer.to_bytes()
    other_target = src_model + b" "  # another target model's bytes
    with pytest.raises(UserError, match="built for other tokenizers than this model's"):
        Shortlist.load(tmp_path / "sl.pt", src_model=src_model, tgt_model=other_target)

    with pytest.raises(UserError, match=r"^shortlist=\S*nope\.pt does not exist; build one with seq2seq-"):
        Translator.from_checkpoint(checkpoint, shortlist=tmp_path / "nope.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a shortlist")
    with pytest.raises(UserError, match="corrupt or truncated"):
        Translator.from_checkpoint(checkpoint, shortlist=tmp_path / "junk.pt")
    absent = [settings[0], "source=absent.src", *settings[2:]]
    missing = run_module("seq2seq.cli.shortlist", *absent, cwd=tmp_path)
    assert error_line(missing).startswith("error: source=absent.src cannot be read (No such file")

    (tmp_path / "short.tgt").write_text("one line\n", encoding="utf-8")
    settings[2] = "target=short.tgt"
    refused = run_module("seq2seq.cli.shortlist", *settings, cwd=tmp_path)
    assert error_line(refused).startswith("error: target=short.tgt ends near line 30 before the other file")


def test_threads_sharing_one_model_each_get_their_own_candidates(tokenizer, monkeypatch) -> None:
    """Two engines on one model, with different shortlists, searched from two threads. Each search
    waits up to 0.5 s inside its batch for the other to arrive: without the lock both batches would
    then run with the same projection swapped in, and the model could keep one of them afterwards."""
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=64)
    projection = model.output
    ids = SpecialIds.of(tokenizer)
    sources = [tokenizer.encode(text) + [ids.eos] for text in sentences(4, seed=9)]
    cpu = torch.device("cpu")
    full = TorchEngine(model, ids, device=cpu, precision="fp32").search(sources, LIMIT, max_tokens=4096)
    wide = covering([list(nbest[0].tokens) for nbest in full], tokenizer.vocab_size)
    narrow = covering([[5, 6]], tokenizer.vocab_size)  # forces other outputs
    engines = [TorchEngine(model, ids, device=cpu, precision="fp32", shortlist=s) for s in (wide, narrow)]
    alone = [engine.search(sources, LIMIT, max_tokens=4096) for engine in engines]
    assert alone[0] != alone[1]

    barrier, unpatched = threading.Barrier(2), search_module.search

    def meeting_search(*args, **kwargs):
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=0.5)
        return unpatched(*args, **kwargs)

    monkeypatch.setattr(search_module, "search", meeting_search)
    with ThreadPoolExecutor(max_workers=2) as pool:
        together = list(pool.map(lambda engine: engine.search(sources, LIMIT, max_tokens=4096), engines))
    assert together == alone
    assert model.output is projection


def test_a_shortlist_keeps_every_constraint_token(tokenizer) -> None:
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=64)
    ids = SpecialIds.of(tokenizer)
    options = SearchOptions(beam_size=4, max_len_a=0.0, max_len_b=10)
    sources = [tokenizer.encode(text) + [ids.eos] for text in sentences(3, seed=5)]
    engine = TorchEngine(model, ids, device=torch.device("cpu"), precision="fp32")
    picked = [list(h.tokens) for nbest in engine.search(sources, options, max_tokens=4096) for h in nbest]
    wanted = next(t for t in range(4, tokenizer.vocab_size) if all(t not in tokens for tokens in picked))
    engine.shortlist = covering(picked, tokenizer.vocab_size)  # it lacks the wanted token
    found = engine.search(sources, options, max_tokens=4096, constraints=[[[wanted]], [], [[wanted]]])
    assert [wanted in nbest[0].tokens for nbest in found] == [True, False, True]
