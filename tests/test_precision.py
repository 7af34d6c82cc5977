"""precision=auto: bf16 autocast only where the CPU's bf16 instructions are present *and* allowed; the one
autocast context every caller uses."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from seq2seq import precision
from seq2seq.errors import UserError
from seq2seq.precision import autocast, check_precision, fast_bf16, resolve_precision

CPU = torch.device("cpu")


@pytest.fixture
def bf16_cpu(monkeypatch):
    """A CPU with AVX512-BF16, ATen on its AVX-512 kernels, no oneDNN limit."""
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: True, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    for name in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_bf16_cpu_trains_in_bf16(bf16_cpu) -> None:
    assert fast_bf16(CPU) and resolve_precision("auto", CPU) == "bf16"
    bf16_cpu.setenv("ONEDNN_MAX_CPU_ISA", "avx512_core_bf16")  # a limit that keeps bf16
    assert fast_bf16(CPU)


@pytest.mark.parametrize(
    ("capability", "isa"), [("AVX2", None), ("AVX512", "AVX2"), ("AVX512", "AVX512_CORE"), ("DEFAULT", None)]
)
def test_emulated_or_missing_bf16_trains_in_fp32(bf16_cpu, capability: str, isa: str | None) -> None:
    """ATEN_CPU_CAPABILITY=avx2 / ONEDNN_MAX_CPU_ISA=AVX2 stand in for an AVX2 CPU: fp32, as there."""
    bf16_cpu.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    if isa is not None:
        bf16_cpu.setenv("ONEDNN_MAX_CPU_ISA", isa)
    assert not fast_bf16(CPU) and resolve_precision("auto", CPU) == "fp32"


def test_a_cpu_without_bf16_trains_in_fp32(bf16_cpu) -> None:
    bf16_cpu.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False, raising=False)
    assert resolve_precision("auto", CPU) == "fp32"
    assert resolve_precision("bf16", CPU) == "bf16"  # an explicit choice is kept


def test_an_unknown_precision_is_one_line() -> None:
    with pytest.raises(UserError, match=r"trainer\.precision='fp16' is not supported"):
        resolve_precision("fp16", CPU)
    assert "AVX2" not in precision.BF16_ONEDNN_ISAS


def test_autocast_is_bf16_autocast_or_nothing() -> None:
    with autocast("bf16", CPU):
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
    with autocast("fp32", CPU):
        assert not torch.is_autocast_enabled("cpu")
    with pytest.raises(UserError, match=r"precision='auto' is not a precision a model runs in; resolve"):
        autocast("auto", CPU)  # auto is resolved first, where the device is known


def test_one_set_of_precisions() -> None:
    """What a model runs in, and what every precision setting may say (training's and inference's): the
    same two plus auto."""
    assert precision.SETTINGS == ("auto", *precision.PRECISIONS)
    assert [check_precision(name) for name in precision.SETTINGS] == list(precision.SETTINGS)
    for setting in precision.SETTINGS:
        assert resolve_precision(setting, CPU) in precision.PRECISIONS


def test_inference_settings_take_auto_and_resolve_it_by_the_training_rule(bf16_cpu, caplog) -> None:
    assert check_precision("auto") == "auto"  # checked before the model loads, resolved once it has a device
    with caplog.at_level("INFO", logger="seq2seq.precision"):
        assert resolve_precision("auto", CPU, key="precision") == "bf16"
    assert "precision=auto: using bf16 on cpu" in caplog.text
    bf16_cpu.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False, raising=False)
    assert resolve_precision("auto", CPU, key="precision") == "fp32"
    with pytest.raises(UserError, match=r"^precision='fp16' is not supported; choose auto, fp32 or bf16$"):
        check_precision("fp16")


PACKAGE = Path(precision.__file__).parent


def test_one_module_builds_the_autocast_context_and_resolves_auto() -> None:
    sources = {path: path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")}
    building = sorted(
        str(path.relative_to(PACKAGE)) for path, text in sources.items() if "torch.autocast(" in text
    )
    assert building == ["precision.py"]
    resolving = sorted(
        str(path.relative_to(PACKAGE)) for path, text in sources.items() if "resolve_precision(" in text
    )
    # defined here; called once per run by the Trainer, and where inference meets its device
    allowed = {"precision.py", "train/loop.py", "inference/translator.py", "inference/engine_choice.py",
               "inference/quality.py", "cli/qe.py"}  # fmt: skip
    assert {"precision.py", "train/loop.py"} <= set(resolving) <= allowed
