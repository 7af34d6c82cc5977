"""A training run's `.hydra/` records (config.yaml, hydra.yaml, overrides.yaml), written once the run
directory is this process's.

Hydra would write them before the task function runs, so a second command in a directory that another
process trains in (refused by the run-directory lock, seq2seq.train.run_dir) would first have replaced
the running run's records with its own settings. seq2seq-train and seq2seq-qe-train set
`hydra.output_subdir: null` and call `write_hydra_records` once the lock is held and the directory has
been checked, with the same files and contents Hydra writes (hydra.yaml's `output_subdir` is null).
"""

from __future__ import annotations

from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from seq2seq.files import atomic_output

RECORDS_DIR = ".hydra"


def write_hydra_records(run_dir: Path, cfg: DictConfig) -> None:
    """The composed config (`cfg`, without Hydra's node), Hydra's own config and the command-line
    overrides, each as Hydra writes it, in run_dir/.hydra/."""
    hydra = HydraConfig.instance().cfg  # the whole config with only the `hydra` node unmasked
    records = {
        "config.yaml": cfg,
        "hydra.yaml": hydra,
        "overrides.yaml": HydraConfig.get().overrides.task,
    }
    directory = Path(run_dir) / RECORDS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    for name, config in records.items():
        with atomic_output(directory / name, "w", encoding="utf-8") as stream:
            stream.write(OmegaConf.to_yaml(config))
