"""seq2seq-serve: an HTTP translation server over a checkpoint or an exported model.

seq2seq-serve checkpoint=runs/quickstart/best.pt port=8080
"""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path

import hydra
import torch
from hydra.utils import to_absolute_path
from omegaconf import DictConfig, OmegaConf

from seq2seq.cli.common import config_dir, exit_on_user_error, number_setting, pick_device
from seq2seq.decode.options import SearchOptions
from seq2seq.decode.translator import Translator
from seq2seq.errors import UserError

log = logging.getLogger("seq2seq.serve")
LIMIT_KEYS = ("max_sentences", "max_chars", "max_beam_size", "max_body_bytes")
BATCH_WAIT_KEYS = ("batch_wait_ms", "max_batch_wait_ms")


@exit_on_user_error
def serve(cfg: DictConfig) -> None:
    logging.basicConfig(stream=sys.stderr, level=str(cfg.log_level).upper(),
                        format="%(asctime)s %(levelname)s %(message)s")  # fmt: skip
    try:
        import uvicorn

        from seq2seq.serve.app import Limits, create_app
        from seq2seq.serve.batcher import BatchingTranslator
    except ImportError:
        raise UserError("seq2seq-serve needs FastAPI and uvicorn; pip install '.[serve]'") from None
    checkpoint = Path(to_absolute_path(str(cfg.checkpoint)))
    limits = Limits(**{key: number_setting(cfg[key], setting=key, minimum=1) for key in LIMIT_KEYS})
    batching = {key: number_setting(cfg[key], setting=key, kind=float) for key in BATCH_WAIT_KEYS}
    batching["max_batch_tokens"] = number_setting(cfg.max_batch_tokens, setting="max_batch_tokens", minimum=1)
    threads = None if cfg.threads is None else number_setting(cfg.threads, setting="threads", minimum=1)
    port = number_setting(cfg.port, setting="port")
    if port > 65535:
        raise UserError(f"port={port} is not a TCP port; use 1-65535 (0: any free port)")
    languages: list[tuple[str, str] | None] = []

    def load() -> Translator:  # on the batcher's worker thread, the only one that runs the model
        if threads:
            torch.set_num_threads(threads)
        translator = Translator.from_checkpoint(
            checkpoint,
            engine=str(cfg.engine),
            device=pick_device(str(cfg.device)),
            precision=str(cfg.precision),
            options=SearchOptions.from_config(OmegaConf.to_container(cfg.decode)),
            max_input_tokens=cfg.max_input_tokens,
            long_lines=str(cfg.long_lines),
        )
        languages.append(_languages(checkpoint))
        translator.translate(["Warm-up."], beam_size=1)  # the first search pays one-time setup, not a user
        return translator

    batcher = BatchingTranslator(load, **batching)
    translator = batcher.translator
    app = create_app(batcher, name=checkpoint.name, languages=languages[0], limits=limits)
    engine, url = translator.engine.name, f"http://{cfg.host}:{port}/"
    log.info("serving %s (%s, step %d) on %s ; SIGTERM or Ctrl-C stops after the requests in flight",
             checkpoint, engine, translator.step, url)  # fmt: skip
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal to the handler that was
    # installed before it ran. With this one, a graceful stop ends the command normally (exit status 0).
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
    uvicorn.run(app, host=str(cfg.host), port=port, log_level="warning", access_log=False)
    log.info("stopped: %d requests served in %d batches", batcher.stats.requests, batcher.stats.batches)


def _languages(checkpoint: Path) -> tuple[str, str] | None:
    """Source and target language of the training config a checkpoint holds, when it says."""
    if not checkpoint.is_file():
        return None
    from seq2seq.checkpoint import load_checkpoint

    data = load_checkpoint(checkpoint).get("config", {}).get("data", {})
    return (data["src_lang"], data["tgt_lang"]) if "src_lang" in data and "tgt_lang" in data else None


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="serve")
def main(cfg: DictConfig) -> None:
    serve(cfg)


if __name__ == "__main__":
    main()
