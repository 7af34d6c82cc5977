"""Linear: oneDNN for float32 CPU inference, F.linear (bitwise) everywhere else."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seq2seq.nn import linear as linear_module
from seq2seq.nn.linear import Linear, linear, onednn_linear_available, onednn_linear_preferred

needs_onednn = pytest.mark.skipif(
    not onednn_linear_available(), reason="this PyTorch build has no oneDNN float32 linear kernel"
)


@pytest.fixture
def prefer_onednn(monkeypatch):
    """oneDNN chosen whatever this CPU is (on AVX2 alone MKL is, see test_the_cpu_decides)."""
    monkeypatch.setattr(linear_module, "onednn_linear_preferred", lambda: True)


def layer(bias: bool = True) -> Linear:
    torch.manual_seed(0)
    return Linear(48, 40, bias=bias)


@needs_onednn
@pytest.mark.parametrize("bias", [True, False])
def test_inference_runs_on_onednn_and_equals_f_linear(bias: bool, monkeypatch, prefer_onednn) -> None:
    module = layer(bias)
    x = torch.randn(3, 7, 48)
    calls = []
    kernel = torch.ops.mkldnn._linear_pointwise
    monkeypatch.setattr(
        linear_module.torch.ops.mkldnn, "_linear_pointwise", lambda *a: calls.append(1) or kernel(*a)
    )
    with torch.inference_mode():
        out = module(x)
    assert calls == [1]
    torch.testing.assert_close(out, F.linear(x, module.weight, module.bias), rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        torch.testing.assert_close(module(x), out, rtol=0, atol=0)


@needs_onednn
def test_strided_and_empty_inputs(prefer_onednn) -> None:
    module = layer()
    x = torch.randn(5, 9, 48)
    with torch.no_grad():
        last = module(x[:, -1])  # a strided (5, 48) view, as decode_step passes it
        torch.testing.assert_close(last, F.linear(x[:, -1], module.weight, module.bias), rtol=1e-5, atol=1e-5)
        assert module(torch.randn(0, 48)).shape == (0, 40)


def test_training_is_f_linear_bitwise_with_gradients() -> None:
    module = layer()
    x = torch.randn(6, 48, requires_grad=True)
    out = module(x)
    reference = nn.Linear(48, 40)
    reference.load_state_dict(module.state_dict())
    x_ref = x.detach().clone().requires_grad_()
    expected = reference(x_ref)
    assert torch.equal(out, expected)
    out.square().sum().backward()
    expected.square().sum().backward()
    assert torch.equal(x.grad, x_ref.grad) and torch.equal(module.weight.grad, reference.weight.grad)


def test_autocast_and_other_dtypes_use_f_linear() -> None:
    module = layer()
    x = torch.randn(4, 48)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        out = module(x)
        assert out.dtype == torch.bfloat16
        assert torch.equal(out, F.linear(x, module.weight, module.bias))
    double = layer().double()
    with torch.no_grad():
        assert torch.equal(double(x.double()), F.linear(x.double(), double.weight, double.bias))


@needs_onednn
@pytest.mark.parametrize("capability, chosen", [("AVX512", True), ("AVX2", False), ("DEFAULT", False)])
def test_the_cpu_decides(capability: str, chosen: bool, monkeypatch) -> None:
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    onednn_linear_preferred.cache_clear()
    try:
        assert onednn_linear_preferred() is chosen
    finally:
        onednn_linear_preferred.cache_clear()


def test_without_the_kernel_everything_is_f_linear(monkeypatch) -> None:
    monkeypatch.setattr(linear_module, "onednn_linear_available", lambda: False)
    onednn_linear_preferred.cache_clear()
    monkeypatch.setattr(linear_module, "onednn_linear_preferred", onednn_linear_preferred.__wrapped__)
    module = layer()
    x = torch.randn(4, 48)
    with torch.no_grad():
        assert torch.equal(module(x), F.linear(x, module.weight, module.bias))
        assert torch.equal(linear(x, module.weight), F.linear(x, module.weight))


def test_same_parameters_and_state_dict_as_nn_linear() -> None:
    module = layer()
    assert isinstance(module, nn.Linear)
    assert list(module.state_dict()) == list(nn.Linear(48, 40).state_dict())
    module.load_state_dict(nn.Linear(48, 40).state_dict())


GROWTH_PROBE = """
import torch
from seq2seq.nn.linear import onednn_linear_available
def linear(x, w):  # the oneDNN kernel as linear() runs it where oneDNN is preferred, whatever this CPU
    return torch.ops.mkldnn._linear_pointwise(x, w, None, "none", [], "")
def rss_mib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmRSS:"))
assert onednn_linear_available()  # and sets the cache bounds, before the first primitive
weights = [torch.randn(out, 256) for out in (768, 1024, 8000)]
with torch.inference_mode():
    [linear(torch.randn(1, 256), w) for w in weights]
    start = rss_mib()
    for rows in range(2, 401):  # a new batch shape each time, as decoding meets them
        x = torch.randn(rows, 256)
        for w in weights:
            linear(x, w)
print(rss_mib() - start)
"""


def memory_growth(env: dict[str, str]) -> int:
    """MiB a fresh process grows by while running the linears of 400 row counts."""
    clean = {k: v for k, v in os.environ.items() if k not in linear_module.ONEDNN_CACHE_VARIABLES}
    result = subprocess.run(
        [sys.executable, "-c", GROWTH_PROBE], env={**clean, **env, "OMP_NUM_THREADS": "1"},
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    return int(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@needs_onednn
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the RSS from /proc (Linux)")
def test_onednn_primitive_caches_are_bounded_so_memory_stops_growing_with_new_shapes() -> None:
    defaults = {name: "1024" for name in linear_module.ONEDNN_CACHE_VARIABLES}  # oneDNN's and ideep's own
    unbounded = memory_growth(defaults)
    bounded = memory_growth({})
    assert bounded * 3 < unbounded, (bounded, unbounded)


def test_bound_onednn_caches_keeps_a_value_the_user_set(monkeypatch) -> None:
    first, second = linear_module.ONEDNN_CACHE_VARIABLES
    monkeypatch.setenv(first, "8")
    monkeypatch.delenv(second, raising=False)
    linear_module.bound_onednn_caches()
    assert os.environ[first] == "8" and os.environ[second] == str(linear_module.ONEDNN_CACHE_CAPACITY)
