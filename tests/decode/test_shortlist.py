"""Vocabulary shortlists (seq2seq.decode.shortlist): the lexical table of a small fixed corpus is exactly
the Dice ranking worked out by hand; a batch's candidates are its rows, the frequent tokens, the special
ids and its prefixes' tokens; a shortlist that holds every token the full-vocabulary search picks gives
the same greedy output (and, on a sharp model, the same beam output), for one model and an ensemble, in
float32 and int8; threads sharing one engine each get their own candidates; a shortlist refuses another
model's tokenizers; seq2seq-shortlist writes one from text files and seq2seq-translate shortlist= uses it."""

from __future__ import annotations

import contextlib
import gzip
import importlib
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from commands import error_line, run_module
from tiny_models import flat_model, save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

from seq2seq.decode.ensemble import Ensemble
from seq2seq.decode.hypotheses import SpecialIds
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.shortlist import (
    BatchCandidates,
    RowCandidates,
    Shortlist,
    build_shortlist,
    restricted,
)
from seq2seq.errors import UserError
from seq2seq.inference.engines import TorchEngine
from seq2seq.inference.translator import Translator
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
    assert shortlist.candidates(src, [[8, 2]]).tolist() == [1, 2, 3, 4, 8]
    two = torch.tensor([[9, 0, 0], [5, 6, 0]])  # each sentence its own rows and needed tokens
    keep = shortlist.keep(two, [[8], []], pad_id=0)  # (B, V)
    assert [row.nonzero().squeeze(1).tolist() for row in keep] == [[1, 3, 4, 8], [1, 3, 4, 7, 8]]


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


def one_sentence(candidates: torch.Tensor, vocab: int) -> torch.Tensor:
    """The (1, V) keep-mask of a batch of one sentence whose candidates are `candidates`."""
    return torch.zeros(1, vocab, dtype=torch.bool).index_fill_(1, candidates, True)


def test_restricted_gives_minus_infinity_outside_the_candidates_and_restores_the_model(tokenizer) -> None:
    model = tiny_model(tokenizer.vocab_size)
    projection = model.output
    candidates = torch.tensor([1, 3, 7, 9])
    hidden = torch.randn(2, 5, model.output.weight.shape[1])  # (B, T, D)
    with torch.no_grad(), restricted(model, one_sentence(candidates, tokenizer.vocab_size)):
        logits = model.output(hidden)  # (B, T, V)
    assert model.output is projection
    expected = projection(hidden)
    torch.testing.assert_close(logits[..., candidates], expected[..., candidates])
    others = torch.ones(tokenizer.vocab_size, dtype=torch.bool)
    others[candidates] = False
    assert torch.isneginf(logits[..., others]).all()


@pytest.mark.slow
def test_a_shortlist_for_other_tokenizers_is_refused_and_the_command_round_trips(tokenizer, tmp_path) -> None:
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=64)
    checkpoint = save_tiny_checkpoint(tmp_path / "model.pt", model, tokenizer, step=1)
    texts = sentences(30, seed=6)
    (tmp_path / "train.src").write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    (tmp_path / "train.tgt").write_text("".join(t.upper() + "\n" for t in texts), encoding="utf-8")
    settings = [
        f"checkpoint={checkpoint}",
        "src_file=train.src",
        "tgt_file=train.tgt",
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
    absent = [settings[0], "src_file=absent.src", *settings[2:]]
    missing = run_module("seq2seq.cli.shortlist", *absent, cwd=tmp_path)
    assert error_line(missing).startswith("error: src_file=absent.src cannot be read (No such file")

    (tmp_path / "short.tgt").write_text("one line\n", encoding="utf-8")
    settings[2] = "tgt_file=short.tgt"
    refused = run_module("seq2seq.cli.shortlist", *settings, cwd=tmp_path)
    assert error_line(refused) == (
        "error: src_file=train.src has 30 lines but tgt_file=short.tgt has 1; parallel files need exactly "
        "one translation per line"
    )


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


# ---------------------------------------------------------------- a sentence's result is its own
VOCAB = 40


def own_candidates_shortlist() -> Shortlist:
    """Each source token has its own 4 target candidates, so sentences of other words get other ones."""
    generator = torch.Generator().manual_seed(11)
    table = torch.randint(4, VOCAB, (VOCAB, 4), generator=generator, dtype=torch.int32)
    return Shortlist(table, torch.tensor([4, 5], dtype=torch.int32), torch.tensor([1, 3], dtype=torch.int32),
                     VOCAB, DIGESTS)  # fmt: skip


SEARCHES = {
    "greedy": SearchOptions(max_len_a=0.0, max_len_b=8),
    "beam": SearchOptions(beam_size=3, nbest=2, max_len_a=0.0, max_len_b=8),
    "constrained": SearchOptions(beam_size=3, nbest=2, max_len_a=0.0, max_len_b=8),
}


@pytest.mark.parametrize("kind", ["single", "ensemble", "decoder_only"])
@pytest.mark.parametrize("search", ["greedy", "beam", "sampling"])
def test_a_sentence_never_outputs_a_token_only_its_batch_mates_may(kind, search) -> None:
    """The tokens the model prefers for the first sentence are candidates of the second one only."""
    model, ids, cpu = flat_model(kind, VOCAB), SpecialIds(bos=2, eos=3, pad=0), torch.device("cpu")
    sources = [[7, 9, 12, 3], [20, 21, 3], [30, 33, 3]]
    options = SearchOptions(sampling=True, nbest=3, seed=1) if search == "sampling" else SEARCHES[search]
    options = options.replace(max_len_a=0.0, max_len_b=8)
    alone = search_module.search_ids(model, sources[:1], options=options, ids=ids, device=cpu)[0]
    preferred = sorted({token for hypothesis in alone for token in hypothesis.tokens})
    others = [token for token in range(4, VOCAB) if token not in preferred]
    table = torch.full((VOCAB, len(preferred) + 4), -1, dtype=torch.int32)
    table[[7, 9, 12], :4] = torch.tensor(others[:4], dtype=torch.int32)
    table[20, : len(preferred)] = torch.tensor(preferred, dtype=torch.int32)
    table[30, :4] = torch.tensor(others[4:8], dtype=torch.int32)
    shortlist = Shortlist(table, torch.zeros(0, dtype=torch.int32), torch.tensor([1, 3], dtype=torch.int32),
                          VOCAB, DIGESTS)  # fmt: skip
    found = search_module.search_ids(
        model, sources, options=options, ids=ids, device=cpu, shortlist=shortlist
    )
    keep = shortlist.keep(pad(sources), pad_id=0)  # (B, V)
    assert not keep[0, preferred].any() and keep[1, preferred].all()
    for own, nbest in zip(keep, found):
        assert all(own[token] for hypothesis in nbest for token in hypothesis.tokens)


@pytest.mark.parametrize("kind", ["single", "ensemble"])
@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_a_sentence_gets_the_same_tokens_and_scores_alone_and_among_others(kind, search) -> None:
    model, shortlist = flat_model(kind, VOCAB), own_candidates_shortlist()
    ids, cpu = SpecialIds(bos=2, eos=3, pad=0), torch.device("cpu")
    sources = [[7, 9, 12, 3], [20, 21, 3], [30, 33, 35, 38, 3]]
    constraints = [[[int(shortlist.table[7, 0])]], [], [[6]]] if search == "constrained" else None
    assert len(shortlist.candidates(torch.tensor([sources[0]]))) < len(shortlist.candidates(pad(sources)))

    def run(indices):
        wanted = None if constraints is None else [constraints[i] for i in indices]
        return search_module.search_ids(
            model, [sources[i] for i in indices], options=SEARCHES[search], ids=ids, device=cpu,
            shortlist=shortlist, constraints=wanted,
        )  # fmt: skip

    together = run([0, 1, 2])
    for index in range(3):
        alone = run([index])[0]
        assert [h.tokens for h in alone] == [h.tokens for h in together[index]]
        for mine, theirs in zip(alone, together[index]):
            assert mine.score == pytest.approx(theirs.score, abs=1e-5)
            assert mine.positional_scores == pytest.approx(theirs.positional_scores, abs=1e-5)


def pad(sources: list[list[int]]) -> torch.Tensor:
    return search_module.pad_batch(sources, 0)


def full_vocabulary_log_probs(model, source: list[int], tokens: list[int]) -> list[float]:
    """The model's own log-probability of each of `tokens` and eos, over the whole vocabulary (an
    ensemble: the mean of its members'), by one teacher-forced forward pass."""
    members = model.members if isinstance(model, Ensemble) else [model]
    src, tgt_in = torch.tensor([source]), torch.tensor([[2, *tokens]])
    targets = torch.tensor([*tokens, 3])
    with torch.no_grad():
        per_member = [torch.log_softmax(m(src, tgt_in)[0].float(), dim=-1) for m in members]  # (T, V) each
        mean = torch.stack(per_member).mean(dim=0)
    return mean[torch.arange(len(targets)), targets].tolist()


@pytest.mark.parametrize("kind", ["single", "ensemble", "decoder_only"])
def test_confidence_under_a_shortlist_is_the_models_own_full_vocabulary_probability(kind) -> None:
    model, shortlist = flat_model(kind, VOCAB), own_candidates_shortlist()
    ids, cpu = SpecialIds(bos=2, eos=3, pad=0), torch.device("cpu")
    sources = [[7, 9, 12, 3], [20, 21, 3]]
    options = SearchOptions(beam_size=2, nbest=2, max_len_a=0.0, max_len_b=6)
    engine = TorchEngine(model, ids, device=cpu, precision="fp32", shortlist=shortlist)
    searched = engine.search(sources, options, max_tokens=4096)
    scored = engine.search(sources, options, max_tokens=4096, confidence=True)
    assert [[h.tokens for h in n] for n in scored] == [[h.tokens for h in n] for n in searched]
    for source, nbest, plain in zip(sources, scored, searched):
        for hypothesis, unscored in zip(nbest, plain):
            expected = full_vocabulary_log_probs(model, source, hypothesis.tokens)
            assert hypothesis.positional_scores == pytest.approx(expected, abs=1e-5)
            assert hypothesis.log_prob == pytest.approx(sum(expected), abs=1e-5)
            assert hypothesis.score == unscored.score  # the search's own ranking score is kept
            # over the candidates only, each token is more likely than over the whole vocabulary
            assert all(a > b for a, b in zip(unscored.positional_scores, expected))


@pytest.mark.skipif(not int8_available(), reason="this PyTorch build has no dynamic int8 kernels")
def test_an_untied_int8_projection_restricted_to_candidates_gives_its_exact_int8_logits(tokenizer) -> None:
    untied = {"share_embeddings": False, "share_decoder_output": False}
    model = quantize_int8(tiny_model(tokenizer.vocab_size, **untied))
    full = model.output
    candidates = torch.tensor([1, 3, 7, 9, 30])
    hidden = torch.randn(2, 5, full.in_features)  # (B, T, D)
    with torch.no_grad(), restricted(model, one_sentence(candidates, tokenizer.vocab_size)):
        logits = model.output(hidden)  # (B, T, V)
    assert model.output is full
    assert torch.equal(logits[..., candidates], full(hidden)[..., candidates])
    again = full.rows(candidates[1:])  # the int8 values unpacked at the first call, kept for the next
    assert torch.equal(again(hidden), full(hidden)[..., candidates[1:]])


def test_row_candidates_restrict_as_a_whole_vocabulary_mask_would() -> None:
    """RowCandidates looks at the union's columns only (the projection made the rest -inf): the result
    is that of masking all V columns with each row's own sentence's candidates, after beams move."""
    vocab, copies = 40, 3
    keep = torch.rand(4, vocab, generator=torch.Generator().manual_seed(0)) < 0.2  # (B, V)
    keep[:, 2] = True  # a token every sentence keeps (eos)
    rows = RowCandidates.of(BatchCandidates.of(keep), copies).select(
        torch.tensor([0, 0, 2, 5, 9, 10, 11, 11])
    )
    logits = torch.randn(8, vocab).masked_fill_(~keep.any(dim=0), float("-inf"))  # (N, V): a projection's
    expected = logits.masked_fill(~keep[torch.tensor([0, 0, 0, 1, 3, 3, 3, 3])], float("-inf"))
    assert torch.equal(rows.restrict_(logits.clone()), expected)


@pytest.mark.slow
def test_the_command_reads_gzip_files_like_plain_ones_and_refuses_damaged_or_unaligned_ones(
    tokenizer, tmp_path
) -> None:
    from omegaconf import OmegaConf

    from seq2seq.cli.shortlist import _pairs

    model = tiny_model(tokenizer.vocab_size, max_positions=64)
    checkpoint = save_tiny_checkpoint(tmp_path / "model.pt", model, tokenizer, step=1)
    texts = sentences(400, seed=6)
    lines = {"src": "".join(t + "\n" for t in texts), "tgt": "".join(t.upper() + "\n" for t in texts)}
    for side, text in lines.items():
        (tmp_path / f"train.{side}").write_text(text, encoding="utf-8")
        (tmp_path / f"train.{side}.gz").write_bytes(gzip.compress(text.encode()))
    for name in ("plain", "gz"):
        suffix = ".gz" if name == "gz" else ""
        files = (f"src_file=train.src{suffix}", f"tgt_file=train.tgt{suffix}")
        result = run_module("seq2seq.cli.shortlist", f"checkpoint={checkpoint}", *files, f"output={name}.pt",
                            cwd=tmp_path)  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
    plain, zipped = (Shortlist.load(tmp_path / f"{n}.pt", src_model=tokenizer.to_bytes(),
                                    tgt_model=tokenizer.to_bytes()) for n in ("plain", "gz"))  # fmt: skip
    assert torch.equal(plain.table, zipped.table) and torch.equal(plain.frequent, zipped.frequent)

    def pairs(source: str, target: str) -> None:
        cfg = OmegaConf.create({"src_file": str(tmp_path / source), "tgt_file": str(tmp_path / target)})
        for _ in _pairs(cfg, (tokenizer, tokenizer)):
            pass

    short = "".join(t + "\n" for t in texts[:399])
    (tmp_path / "short.tgt.gz").write_bytes(gzip.compress(short.encode()))
    with pytest.raises(
        UserError, match=r"^src_file=\S+train\.src\.gz has 400 lines but tgt_file=\S+short\.tgt\.gz has 399; "
    ):
        pairs("train.src.gz", "short.tgt.gz")
    whole = (tmp_path / "train.tgt.gz").read_bytes()
    (tmp_path / "cut.tgt.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(
        UserError, match=r"^\S+cut\.tgt\.gz: cannot be read \(.*\); check or re-download the file$"
    ):
        pairs("train.src.gz", "cut.tgt.gz")
    (tmp_path / "latin1.tgt.gz").write_bytes(
        gzip.compress(lines["tgt"].replace("GOD", "G\xd6D").encode("latin-1"))
    )
    pairs("train.src.gz", "latin1.tgt.gz")  # invalid UTF-8 becomes U+FFFD, as --help says


def test_a_translators_confidence_is_the_same_with_a_shortlist_that_holds_its_tokens(
    tokenizer, tmp_path
) -> None:
    model = tiny_model(tokenizer.vocab_size, sharpness=4.0, max_positions=64)
    checkpoint = save_tiny_checkpoint(tmp_path / "model.pt", model, tokenizer, step=1)
    texts = sentences(6, seed=3)
    full, short = (Translator.from_checkpoint(checkpoint, options=LIMIT) for _ in range(2))
    theirs = full.translate(texts, confidence=True)
    pieces = [[tokenizer.piece_to_id(piece) for piece in t.tokens if piece != "</s>"] for t in theirs]
    short.engine.shortlist = covering(pieces, tokenizer.vocab_size)
    ours = short.translate(texts, confidence=True)
    assert [t.text for t in ours] == [t.text for t in theirs]
    for a, b in zip(ours, theirs):
        assert a.token_probs == pytest.approx(b.token_probs, abs=1e-5)
        assert a.confidence == pytest.approx(b.confidence, abs=1e-6)


@pytest.mark.slow
def test_a_multilingual_models_shortlist_names_its_direction(tmp_path) -> None:
    """seq2seq-shortlist for our own multilingual model needs src_lang/tgt_lang (one direction), records
    them, and the export refuses it (CTranslate2 would apply it to every direction)."""
    from multilingual_model import own_multilingual_checkpoint

    from seq2seq.checkpoint import load_checkpoint
    from seq2seq.decode.shortlist import Shortlist

    checkpoint = own_multilingual_checkpoint(tmp_path / "both.pt")
    texts = sentences(20, seed=4)
    (tmp_path / "train.en").write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    (tmp_path / "train.es").write_text("".join(t.upper() + "\n" for t in texts), encoding="utf-8")
    settings = [f"checkpoint={checkpoint}", "src_file=train.en", "tgt_file=train.es", "output=sl.pt"]
    refused = run_module("seq2seq.cli.shortlist", *settings, cwd=tmp_path)
    assert "this model is multilingual: a shortlist serves one direction; pass src_lang=" in error_line(
        refused
    )
    unknown = run_module("seq2seq.cli.shortlist", *settings, "src_lang=en", "tgt_lang=de", cwd=tmp_path)
    assert "tgt_lang='de' is not a language of this model" in error_line(unknown)
    made = run_module("seq2seq.cli.shortlist", *settings, "src_lang=en", "tgt_lang=es", cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-2000:]
    payload = load_checkpoint(checkpoint)
    loaded = Shortlist.load(
        tmp_path / "sl.pt", src_model=payload["tokenizer"]["src"], tgt_model=payload["tokenizer"]["src"]
    )
    assert loaded.languages == ("en", "es")
    exported = run_module("seq2seq.cli.export", f"checkpoint={checkpoint}",
                          f"output_dir={tmp_path / 'ct2'}", "shortlist=sl.pt", cwd=tmp_path)  # fmt: skip
    assert "shortlist= of a multilingual model serves one direction (en->es)" in error_line(exported)
