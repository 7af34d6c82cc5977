"""Static caches and the compiled decoder step (seq2seq.decode.compiled): a search on static caches equals
today's on growing caches, and the compiled step gives the eager one's tokens for greedy, beam, ensemble
and prefix searches. Compiling costs seconds per kind of search, so the compiled tests share one model."""

from __future__ import annotations

import pytest
import tiny_models
import torch
from decode_helpers import IDS, PAD, sources

from seq2seq.decode import beam_search, greedy_search
from seq2seq.decode.compiled import (
    AUTO_MIN_SENTENCES,
    compile_setting,
    should_compile,
    use_eager_decoding,
    use_static_decoding,
)
from seq2seq.decode.ensemble import Ensemble
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.nn.kv_cache import StaticKVCache

LIMITS = SearchOptions(max_len_a=1.0, max_len_b=4)
CPU = torch.device("cpu")


def model_with(seed: int = 3, **overrides):
    untied = {"share_embeddings": False, "share_decoder_output": False}
    return tiny_models.tiny_model(12, seed=seed, pad_id=PAD, sharpness=6.0, **{**untied, **overrides})


def run(model, src, search: str, prefix=None):
    """(tokens, scores) of every hypothesis of the search."""
    if search == "greedy":
        results = [[h] for h in greedy_search(model, src, LIMITS, prefix=prefix, **IDS)]
    else:
        results = beam_search(model, src, LIMITS.replace(beam_size=3, nbest=2), prefix=prefix, **IDS)
    return [[h.tokens for h in row] for row in results], [[h.score for h in row] for row in results]


def assert_same(found, expected):
    assert found[0] == expected[0]
    for mine, theirs in zip(found[1], expected[1]):
        assert mine == pytest.approx(theirs, abs=1e-5)


@pytest.mark.parametrize("search", ["greedy", "beam"])
@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"positional": "rope"},
        {"positional": "alibi", "alibi_cross_attention": True},
        {"cross_downsample": 2},
    ],
    ids=["sinusoidal", "rope", "alibi", "pooled-memory"],
)
def test_a_search_on_static_caches_equals_todays(search, overrides):
    model = model_with(**overrides)
    src = sources([5, 8, 3, 6], seed=4)
    prefix = [[5], [], [7, 6], []]
    for forced in (None, prefix):
        expected = run(model, src, search, forced)
        use_static_decoding(model, compiled=False)
        try:
            assert_same(run(model, src, search, forced), expected)
        finally:
            use_eager_decoding(model)


def test_static_caches_take_the_compute_dtype_under_bf16_autocast():
    model = model_with(seed=5)
    src = sources([5, 8, 4], seed=2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = run(model, src, "beam")
        use_static_decoding(model, compiled=False)
        try:
            state = model.init_state(model.encode(src), beam_size=2, max_steps=6)
            found = run(model, src, "beam")
        finally:
            use_eager_decoding(model)
    assert state.caches[0].buffers[0].dtype == torch.bfloat16
    assert found[0] == expected[0]


def test_static_caches_keep_finite_numbers_past_the_filled_steps():
    like = torch.ones(1)
    cache = StaticKVCache(4, 2, 5, 3, like=like)
    keys, _ = cache.buffers
    keys[:, :, :2] = torch.arange(4.0)[:, None, None, None]
    cache.length = 2
    cache.reorder(torch.tensor([3, 3, 1, 0, 2]))  # more rows than before: gathered into a new buffer
    keys, _ = cache.buffers
    assert keys.shape == (5, 2, 5, 3)
    assert keys[:, 0, 0, 0].tolist() == [3.0, 3.0, 1.0, 0.0, 2.0]
    assert torch.isfinite(keys).all() and bool((keys[:, :, 2:] == 0).all())  # 0 * NaN would be NaN
    with pytest.raises(RuntimeError, match="CacheSlot"):
        cache.append(keys[:, :, :1], keys[:, :, :1])


@pytest.fixture(scope="module")
def compiled_model():
    """One model whose compiled step every test below shares (each kind of search compiles once)."""
    torch.set_num_threads(1)
    model = model_with(seed=11, encoder_layers=1, decoder_layers=1)  # a smaller graph compiles sooner
    use_static_decoding(model, compiled=True)
    return model


@pytest.mark.slow
@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_compiled_decoding_gives_the_eager_tokens(compiled_model, search):
    src = sources([6, 4, 7, 5, 3, 8], seed=9)
    prefix = [[4, 5], [], [6], [], [9, 9], []]
    compiled = [run(compiled_model, src, search, forced) for forced in (None, prefix)]
    ensemble = run(Ensemble([compiled_model, compiled_model]).eval(), src, search)
    step = compiled_model.static_step_function
    use_eager_decoding(compiled_model)
    try:
        eager = [run(compiled_model, src, search, forced) for forced in (None, prefix)]
        eager_ensemble = run(Ensemble([compiled_model, compiled_model]).eval(), src, search)
    finally:
        compiled_model.static_step_function = step
    assert compiled[0][0] != compiled[1][0]  # the prefixes change the outputs
    for found, expected in zip([*compiled, ensemble], [*eager, eager_ensemble]):
        assert_same(found, expected)


def test_compile_settings():
    model, decoder_only = model_with(), tiny_models.tiny_decoder_only(12, pad_id=PAD)
    assert [compile_setting(v) for v in (True, False, "auto", "TRUE")] == ["true", "false", "auto", "true"]
    with pytest.raises(UserError, match=r"compile='yes' is not supported; choose auto, true, false"):
        compile_setting("yes")
    big, small = AUTO_MIN_SENTENCES, AUTO_MIN_SENTENCES - 1
    assert should_compile("auto", model, sentences=big, device=CPU)
    assert not should_compile("auto", model, sentences=small, device=CPU)
    assert not should_compile("auto", model, sentences=big, device=CPU, greedy=False)  # beam: slower compiled
    assert should_compile("true", model, sentences=1, device=CPU, greedy=False)
    assert not should_compile("auto", model, sentences=big, device=torch.device("cuda"))  # unmeasured there
    assert not should_compile("false", model, sentences=big, device=CPU)
    assert should_compile("true", model, sentences=1, device=CPU)
    refused = {
        "this is decoder_only": {"model": decoder_only},
        "sliding-window attention": {"model": model_with(window=2)},
        "int8 kernels": {"model": model, "quantization": "int8"},
        "a shortlist swaps": {"model": model, "shortlist": True},
    }
    for reason, arguments in refused.items():
        assert not should_compile("auto", sentences=big, device=CPU, **arguments)
        with pytest.raises(UserError, match=f"compile=true cannot be used here: .*{reason}"):
            should_compile("true", sentences=1, device=CPU, **arguments)


def test_a_search_started_on_static_caches_finishes_if_the_model_is_switched_back_meanwhile():
    model = model_with(seed=7)
    src = sources([5, 6], seed=3)
    expected = run(model, src, "greedy")
    use_static_decoding(model, compiled=False)
    state = model.init_state(model.encode(src), beam_size=1, max_steps=4)
    use_eager_decoding(model)  # another thread's search chose eager decoding
    tokens = torch.full((2, 1), 2)
    logits, state = model.decode_step(tokens, state)
    assert logits.argmax(dim=-1).tolist() == [row[0][0] if row[0] else 3 for row in expected[0]]
    assert run(model, src, "greedy") == expected


def test_a_shared_engine_holds_each_searchs_choice_of_caches_for_the_whole_search(monkeypatch):
    """Item: with compile=auto, another thread's search could switch the model to static caches between
    start_search's choice of the cache size (growing: at most 128 steps up front) and init_state, which
    then built static caches of 128 steps for an output of 200 tokens. Here the other search starts at
    exactly that moment; the first must still give the output it gives alone, and so must the other."""
    import threading

    from seq2seq.decode import compiled
    from seq2seq.inference import engines

    model = model_with(seed=7, max_positions=256)
    long = SearchOptions(beam_size=1, min_len=200, max_len_a=0.0, max_len_b=200)  # 200 tokens, then eos
    alone = engines.TorchEngine(
        model_with(seed=7, max_positions=256), IDS["ids"], device=CPU, precision="fp32"
    )
    short_sources, long_sources = [[5, 6, 3], [7, 4, 3]], [[5, 8, 6, 3]]
    expected = [
        alone.search(long_sources, long, max_tokens=4096),
        alone.search(short_sources, LIMITS, max_tokens=4096),
    ]
    assert len(expected[0][0][0].tokens) == 200
    monkeypatch.setattr(compiled, "AUTO_MIN_SENTENCES", 2)  # the other search (2 sentences) chooses static
    switched = threading.Event()

    def static_without_compiling(model, *, compiled):  # the same caches and step, eagerly: no compile time
        use_static_decoding(model, compiled=False)
        switched.set()

    monkeypatch.setattr(engines, "use_static_decoding", static_without_compiling)
    engine = engines.TorchEngine(model, IDS["ids"], device=CPU, precision="fp32", compile="auto")
    other: list = []

    def other_search() -> None:
        other.append(engine.search(short_sources, LIMITS, max_tokens=4096))

    thread = threading.Thread(target=other_search)
    init_state = model.init_state

    def other_search_starts_first(*args, **kwargs):  # between start_search's choice and init_state's
        if threading.current_thread() is not thread and thread.ident is None:
            thread.start()
            switched.wait(timeout=1.0)  # the other search switches now, unless it must wait for this one
        return init_state(*args, **kwargs)

    monkeypatch.setattr(model, "init_state", other_search_starts_first)
    try:
        found = engine.search(long_sources, long, max_tokens=4096)
    finally:
        thread.join(timeout=60)
    assert switched.is_set() and other  # the other search did run, with the static caches it chose
    assert [[h.tokens for h in row] for row in found] == [[h.tokens for h in row] for row in expected[0]]
    assert [[h.tokens for h in row] for row in other[0]] == [[h.tokens for h in row] for row in expected[1]]
