"""Which 30-minute recipe the quickstart trains on this machine, by what it detects: native bf16 or not,
and the number of cores.

    python -m seq2seq.cli.config.recipe_choice        # prints: EXPERIMENT<TAB>why   (EXPERIMENT empty: defaults)

A wall-clock budget buys a CPU-dependent number of updates, and the recipe that wins depends on it:
seq2seq-train's defaults were searched on 2 AVX512-BF16 cores (bf16 autocast, about 1,800 updates in 30
minutes); without native bf16, 2 cores make about half that in fp32, and `configs/experiment/
cpu_fp32_30min.yaml` was searched for that case (docs/studies/recipe_cpu_fp32.md). With FEW_CORES or
more, an fp32 machine is assumed to make as many updates as the bf16 one, and gets the defaults.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

FP32_RECIPE = "cpu_fp32_30min"
FEW_CORES = 4  # fp32 machines with fewer cores get FP32_RECIPE


@dataclass(frozen=True)
class RecipeChoice:
    experiment: str  # a name in configs/experiment/, or "" for seq2seq-train's defaults
    reason: str


def choose_recipe(*, bf16_native: bool, cores: int) -> RecipeChoice:
    """The recipe for a CPU with or without native bf16 and `cores` usable cores."""
    if bf16_native:
        return RecipeChoice("", f"native bf16, {cores} cores: the defaults, searched on AVX512-BF16")
    if cores < FEW_CORES:
        return RecipeChoice(
            FP32_RECIPE, f"no native bf16, {cores} cores: fp32 makes about half the bf16 updates"
        )
    return RecipeChoice("", f"no native bf16 but {cores} cores: the defaults")


def usable_cores() -> int:
    """Cores this process may run on (a container's or taskset's limit, not the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def detected_choice() -> RecipeChoice:
    import torch

    from seq2seq.precision import fast_bf16

    return choose_recipe(bf16_native=fast_bf16(torch.device("cpu")), cores=usable_cores())


def main() -> None:
    choice = detected_choice()
    print(f"{choice.experiment}\t{choice.reason}")


if __name__ == "__main__":
    main()
