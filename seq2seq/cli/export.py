"""seq2seq-export: a trained checkpoint -> a model directory for an inference engine (CTranslate2), a
Hugging Face model directory (target=huggingface: MarianMT or M2M100, seq2seq.interop.huggingface_export),
or an Argos Translate package (target=argos: a .argosmodel file in output_dir, seq2seq.export.argos).

Either family exports to CTranslate2 with the same command: an encoder-decoder for its Translator, a
causal decoder-only model for its Generator (seq2seq.export.ctranslate2 reads the family from the
checkpoint).

seq2seq-export checkpoint=runs/quickstart/best.pt output_dir=exported/bible weight_format=int8
seq2seq-export checkpoint=models/opus-en-es-tuned.pt output_dir=hf/opus-en-es-tuned target=huggingface
seq2seq-export checkpoint=runs/quickstart/best.pt output_dir=exported/argos target=argos

Renamed in this release, accepted until the next (command_settings.OLD_NAMES): output= (output_dir: it is
a directory, and `output` is a file in every command) and format= (target: `format` is translate's
document format).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from hydra.utils import to_absolute_path
from omegaconf import DictConfig

from seq2seq.cli.config.launch import command_main, exit_on_user_error
from seq2seq.errors import UserError
from seq2seq.export.argos import export_argos
from seq2seq.export.ctranslate2 import export_ctranslate2
from seq2seq.inference.exported import read_metadata
from seq2seq.interop.huggingface_export import export_huggingface

log = logging.getLogger("seq2seq.export")
TARGETS = ("ctranslate2", "huggingface", "argos")


@exit_on_user_error
def export(cfg: DictConfig) -> Path:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if cfg.target not in TARGETS:
        raise UserError(f"target={cfg.target!r} is not supported; choose {', '.join(TARGETS)}")
    checkpoint, output = Path(to_absolute_path(cfg.checkpoint)), Path(to_absolute_path(cfg.output_dir))
    if cfg.target == "argos":
        return _export_argos(cfg, checkpoint, output)
    languages = [key for key in ("src_lang", "tgt_lang") if cfg.get(key) is not None]
    if languages and cfg.target == "huggingface":
        given = " or ".join(f"{key}=" for key in languages)
        raise UserError(f"target=huggingface takes no {given}: they name the languages a CTranslate2 "
                        "export or an Argos Translate package records; drop them")  # fmt: skip
    if len(languages) == 1:
        raise UserError(f"{languages[0]}= alone: name the pair the export records, src_lang= and tgt_lang=")
    if cfg.target == "huggingface":
        return _export_huggingface(cfg, checkpoint, output)
    written = export_ctranslate2(
        checkpoint, output, weight_format=str(cfg.weight_format), force=bool(cfg.force),
        shortlist=None if cfg.shortlist is None else Path(to_absolute_path(str(cfg.shortlist))),
        torch_weights=torch_weights_setting(cfg.get("torch_weights", True)),
        languages=(str(cfg.src_lang), str(cfg.tgt_lang)) if languages else None,
    )  # fmt: skip
    size = sum(p.stat().st_size for p in written.iterdir()) / 2**20
    family = read_metadata(written)["family"]  # which CTranslate2 class will run it
    log.info("exported %s (%s) to %s (%s, %.1f MB); translate with: seq2seq-translate checkpoint=%s",
             checkpoint, family, written, cfg.weight_format, size, cfg.output_dir)  # fmt: skip
    return written


def _export_huggingface(cfg: DictConfig, checkpoint: Path, output: Path) -> Path:
    """target=huggingface: the CTranslate2 settings have no meaning there and are refused when set."""
    if str(cfg.weight_format) != "float32":
        raise UserError(f"weight_format={cfg.weight_format} is CTranslate2's; target=huggingface writes "
                        "float32 weights (drop weight_format)")  # fmt: skip
    if cfg.shortlist is not None:
        raise UserError(
            "shortlist= is exported as CTranslate2's vocabulary map; drop it with target=huggingface"
        )
    if not isinstance(cfg.force, bool):
        raise UserError(f"force={cfg.force!r} must be true or false")
    written = export_huggingface(checkpoint, output, force=cfg.force)
    size = sum(p.stat().st_size for p in written.iterdir()) / 2**20
    log.info("wrote %s (%.1f MB)", written, size)
    return written


def _export_argos(cfg: DictConfig, checkpoint: Path, output: Path) -> Path:
    """target=argos: the package holds CTranslate2's model without pytorch.pt (argostranslate never reads
    it; torch_weights is not asked), and argostranslate has no use for a vocabulary map."""
    if cfg.shortlist is not None:
        raise UserError("shortlist= is exported as CTranslate2's vocabulary map, which argostranslate "
                        "never uses; drop it with target=argos")  # fmt: skip
    if not isinstance(cfg.force, bool):
        raise UserError(f"force={cfg.force!r} must be true or false")
    languages = {key: None if cfg.get(key) is None else str(cfg.get(key)) for key in ("src_lang", "tgt_lang")}
    written = export_argos(
        checkpoint, output, weight_format=str(cfg.weight_format), force=cfg.force, **languages
    )
    log.info("wrote %s (%.1f MB); install it with argostranslate.package.install_from_path",
             written, written.stat().st_size / 2**20)  # fmt: skip
    return written


def torch_weights_setting(value: object) -> bool:
    if not isinstance(value, bool):
        raise UserError(f"torch_weights={value!r} must be true or false")
    return value


main = command_main(export, command="seq2seq-export", config_name="export")


if __name__ == "__main__":
    main()
