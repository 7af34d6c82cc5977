"""KV cache growth and reordering, and cached self-attention equal to full self-attention."""

from __future__ import annotations

import pytest
import torch

from seq2seq.nn.attention import AttentionContext, SelfAttention
from seq2seq.nn.kv_cache import DecoderState, KVCache, rows_to_move
from seq2seq.nn.positional import RotaryEmbedding, alibi_slopes

TOL = {"rtol": 1e-5, "atol": 1e-5}


def steps(batch: int, total: int, *, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(batch, 2, total, 4, generator=gen), torch.randn(batch, 2, total, 4, generator=gen)


def test_append_returns_everything_so_far_across_growth() -> None:
    k_all, v_all = steps(3, 40)
    cache = KVCache()
    start = 0
    for size in [1, 1, 5, 2, 1, 9, 3, 18]:  # crosses the initial capacity and two doublings
        k, v = cache.append(k_all[:, :, start : start + size], v_all[:, :, start : start + size])
        start += size
        assert cache.length == start
        assert torch.equal(k, k_all[:, :, :start]) and torch.equal(v, v_all[:, :, :start])
    assert cache._k.shape[2] >= 40


def test_storage_doubles_so_single_steps_rarely_reallocate() -> None:
    k_all, v_all = steps(1, 100)
    cache = KVCache()
    buffers = set()
    for t in range(100):
        cache.append(k_all[:, :, t : t + 1], v_all[:, :, t : t + 1])
        buffers.add(cache._k.data_ptr())
    assert len(buffers) <= 4  # capacities 16, 32, 64, 128


def test_reorder_selects_rows_and_appending_continues() -> None:
    k_all, v_all = steps(3, 6)
    cache = KVCache()
    cache.append(k_all[:, :, :4], v_all[:, :, :4])
    index = torch.tensor([2, 2, 0])
    cache.reorder(index)
    k, v = cache.append(k_all[:, :, 4:6], v_all[:, :, 4:6])
    expected_k = torch.cat([k_all[index, :, :4], k_all[:, :, 4:6]], dim=2)
    expected_v = torch.cat([v_all[index, :, :4], v_all[:, :, 4:6]], dim=2)
    assert torch.equal(k, expected_k) and torch.equal(v, expected_v)
    KVCache().reorder(index)  # an empty cache has nothing to reorder


def test_gathering_reorders_alternate_between_two_buffers() -> None:
    """The accelerator path (gather every row): rows stay right, and storage is two buffers that
    take turns, never a fresh allocation per step."""
    k_all, v_all = steps(4, 20)
    cache = KVCache()
    expected_k = torch.empty(4, 2, 0, 4)
    buffers = set()
    gen = torch.Generator().manual_seed(1)
    for t in range(20):
        k, _ = cache.append(k_all[:, :, t : t + 1], v_all[:, :, t : t + 1])
        expected_k = torch.cat([expected_k, k_all[:, :, t : t + 1]], dim=2)
        assert torch.equal(k, expected_k)
        index = torch.randint(0, 4, (4,), generator=gen)
        cache.gather_rows(index)
        expected_k = expected_k[index]
        if t >= 16:  # past the growth from capacity 16 to 32
            buffers.add(cache._k.data_ptr())
    assert len(buffers) == 2


def test_cpu_reorders_copy_only_the_changed_rows_in_place() -> None:
    k_all, v_all = steps(6, 10)
    cache = KVCache(capacity=10)
    cache.append(k_all[:, :, :7], v_all[:, :, :7])
    storage = cache._k.data_ptr()
    index = torch.tensor([0, 0, 2, 1, 4, 5])  # rows 1 and 3 change; row 1's source is row 0
    assert rows_to_move(index, 6).tolist() == [1, 3]
    cache.reorder(index)
    assert cache._k.data_ptr() == storage and cache._spare is None  # no second buffer
    k, v = cache.append(k_all[:, :, 7:], v_all[:, :, 7:])
    assert torch.equal(k, torch.cat([k_all[index, :, :7], k_all[:, :, 7:]], dim=2))
    assert torch.equal(v, torch.cat([v_all[index, :, :7], v_all[:, :, 7:]], dim=2))


def test_dropping_rows_on_cpu_keeps_the_storage() -> None:
    k_all, v_all = steps(6, 9)
    cache = KVCache(capacity=9)
    cache.append(k_all[:, :, :5], v_all[:, :, :5])
    storage = cache._k.data_ptr()
    index = torch.tensor([3, 2, 5, 4])  # two sentences of two beams each dropped, beams swapped
    cache.reorder(index)
    assert cache._k.data_ptr() == storage and cache._k.shape[0] == 4
    k, v = cache.append(k_all[:4, :, 5:], v_all[:4, :, 5:])
    assert torch.equal(k, torch.cat([k_all[index, :, :5], k_all[:4, :, 5:]], dim=2))
    assert torch.equal(v, torch.cat([v_all[index, :, :5], v_all[:4, :, 5:]], dim=2))


def test_rows_to_move() -> None:
    assert rows_to_move(torch.arange(4), 4).tolist() == []  # nothing moves
    assert rows_to_move(torch.tensor([1, 2, 0, 3]), 4).tolist() == [0, 1, 2]
    assert rows_to_move(torch.tensor([0, 3]), 4).tolist() == [1]  # rows dropped
    assert rows_to_move(torch.tensor([0, 0, 1, 1, 2]), 4) is None  # more rows: gather
    assert rows_to_move(torch.tensor([0, 1], device="meta"), 2) is None  # not on CPU


def test_capacity_given_up_front_never_grows() -> None:
    k_all, v_all = steps(2, 30)
    cache = KVCache(capacity=30)
    storage = None
    for t in range(30):
        cache.append(k_all[:, :, t : t + 1], v_all[:, :, t : t + 1])
        storage = storage or cache._k.data_ptr()
        assert cache._k.data_ptr() == storage
    assert cache._k.shape[2] == 30


@pytest.mark.parametrize(
    ("memory", "order"),
    [(True, [1, 0, 0]), (False, [1, 0, 0]), (True, [0, 0, 2]), (False, [0, 0, 2]), (True, [2, 0])],
    ids=["most-rows-move", "most-rows-move-same-memory", "one-row-moves", "one-row-same-memory", "drop-one"],
)
def test_decoder_state_reorder(memory: bool, order: list[int]) -> None:
    k_all, v_all = steps(3, 5)
    caches = [KVCache(), KVCache()]
    for cache in caches:
        cache.append(k_all[:, :, :2], v_all[:, :, :2])
    cross_kv = [(k_all.clone(), v_all.clone()) for _ in caches]
    keep = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)
    state = DecoderState(
        caches=caches, cross_kv=cross_kv, memory_keep=keep, memory_positions=torch.arange(5.0), steps=2
    )
    index = torch.tensor(order)
    assert state.reorder(index, memory=memory) is state
    assert state.batch_size == len(order) and state.steps == 2
    for cache in state.caches:
        assert torch.equal(cache._k[:, :, : cache.length], k_all[index, :, :2])
    want_k, want_keep = (k_all[index], keep[index]) if memory else (k_all, keep)
    assert all(torch.equal(k, want_k) for k, _ in state.cross_kv)
    assert torch.equal(state.memory_keep, want_keep)


def contexts(kind: str, heads: int, head_dim: int, start: int, length: int) -> AttentionContext:
    """A causal decoder self-attention context for tokens at positions start .. start+length-1."""
    q_positions = torch.arange(start, start + length)
    k_positions = torch.arange(start + length)
    rope = RotaryEmbedding(head_dim)(q_positions) if kind == "rope" else None
    slopes = alibi_slopes(heads) if kind == "alibi" else None
    return AttentionContext(
        causal=True, rope=rope, alibi_slopes=slopes, q_positions=q_positions, k_positions=k_positions
    )


@pytest.mark.parametrize("kind", ["none", "rope", "alibi"])
@pytest.mark.parametrize("window", [None, 1, 3])
@pytest.mark.parametrize("chunk", [1, 2, 3])
def test_cached_self_attention_equals_full(kind: str, window: int | None, chunk: int) -> None:
    torch.manual_seed(0)
    heads, d_model, length = 2, 8, 11  # 11 > 2W: the full pass takes the blockwise local path
    module = SelfAttention(d_model, heads, window=window).eval()
    x = torch.randn(2, length, d_model)
    full = module(x, contexts(kind, heads, d_model // heads, 0, length))
    cache = KVCache()
    pieces = []
    for start in range(0, length, chunk):
        piece = x[:, start : start + chunk]
        pieces.append(module(piece, contexts(kind, heads, d_model // heads, start, piece.shape[1]), cache))
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, **TOL)
    assert cache.length == length
