"""seq2seq-serve: an HTTP translation server over a checkpoint or an exported model.

seq2seq-serve checkpoint=runs/quickstart/best.pt port=8080

threads= is num_threads' old name (renamed in this release: one thread setting's name, as
trainer.num_threads), accepted until the next release.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import sys
from collections.abc import Callable
from typing import Any

import torch
from hydra.utils import to_absolute_path
from omegaconf import DictConfig, OmegaConf

from seq2seq.cli.config.launch import command_main, exit_on_user_error
from seq2seq.cli.config.setting_checks import log_level_setting, number_setting
from seq2seq.cli.config.translator_config import checkpoint_paths, rerank_weight, translator_from_config
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.glossary import Glossary
from seq2seq.inference.language_detection import AUTO
from seq2seq.inference.translator import Translator

log = logging.getLogger("seq2seq.serve")
# Numeric settings and their ranges: every one finite (Hydra reads `inf` and `nan` as numbers).
LIMITS = {"max_sentences": 100_000, "max_chars": 1_000_000, "max_beam_size": 1024, "max_body_bytes": 1 << 30,
          "max_phrases": 1024, "max_phrase_chars": 1_000_000}  # fmt: skip
INTEGERS = {"max_tokens": (1, 10_000_000), "max_queue": (1, 1_000_000)}
FLOATS = {"batch_wait_ms": (0, 60_000), "max_batch_wait_ms": (0, 60_000), "error_delay_ms": (0, 10_000),
          "request_timeout_s": (0.01, 86_400)}  # fmt: skip
ORIGIN = re.compile(r"https?://[^/\s]+")
LANGUAGES = ("src_lang", "tgt_lang")
ONE_MODEL = ("glossary", "shortlist", "qe_checkpoint")  # a model's own files: refused with several models


@exit_on_user_error
def serve(cfg: DictConfig) -> None:
    logging.basicConfig(stream=sys.stderr, level=log_level_setting(cfg.log_level),
                        format="%(asctime)s %(levelname)s %(message)s")  # fmt: skip
    try:
        from seq2seq.serve.app import create_app
        from seq2seq.serve.metrics import Metrics
        from seq2seq.serve.requests import Limits
        from seq2seq.serve.security import exposure_warning
    except ImportError:
        raise UserError(
            "seq2seq-serve needs FastAPI, uvicorn and prometheus-client; pip install '.[serve]'"
        ) from None
    checkpoints = served_checkpoints(cfg)
    settings = read_settings(cfg)
    limits = Limits(**{key: settings.pop(key) for key in LIMITS})
    metrics = Metrics()
    models = load_models(cfg, checkpoints, settings, metrics)
    shared = {
        key: settings[key] for key in ("request_timeout_s", "error_delay_ms", "api_key", "cors_origins")
    }
    app = create_app(models, limits=limits, metrics=metrics, **shared)
    host, port = str(cfg.host), settings["port"]
    if (warning := exposure_warning(host, settings["api_key"])) is not None:
        log.warning(warning)
    for model in models:
        log.info("serving %s (%s, step %d): %s", model.name, model.translator.engine.name,
                 model.translator.step, model.languages.pairs()[:6] or "its own languages")  # fmt: skip
    log.info("listening on http://%s:%d/ ; SIGTERM or Ctrl-C stops after the requests in flight, a second "
             "Ctrl-C at once", host, port)  # fmt: skip
    run_server(app, host=host, port=port, graceful_s=settings["request_timeout_s"])
    stats = models.stats()
    log.info("stopped: %d requests served in %d batches", stats["requests"], stats["batches"])


def load_models(cfg: DictConfig, checkpoints: list[list[str]], settings: dict[str, Any], metrics: Any) -> Any:
    """ServedModels: each model loaded on its own batcher's worker thread, in order."""
    from seq2seq.serve.batcher import BatchingTranslator
    from seq2seq.serve.served_models import ServedModel, ServedModels, model_names

    decode = OmegaConf.to_container(cfg.decode)  # keys left null: the model's own tuned values, if any
    SearchOptions.from_config(decode)  # checked now, before the model loads
    rerank_weight(cfg)  # likewise
    glossary = None if cfg.glossary is None else Glossary.load(to_absolute_path(str(cfg.glossary)))
    # The server's languages: the model's own with one model (auto: detected per text, by the router),
    # the pair that routes requests naming none with several.
    own = {key: None if len(checkpoints) > 1 or cfg[key] == AUTO else cfg[key] for key in LANGUAGES}

    def loader(paths: list[str]) -> Callable[[], Translator]:
        def load() -> Translator:  # on the model's batcher's worker thread, the only one that runs it
            if settings["num_threads"]:
                torch.set_num_threads(settings["num_threads"])
            translator = translator_from_config(
                cfg, checkpoint=paths[0] if len(paths) == 1 else paths, options=decode,
                max_input_tokens=settings["max_input_tokens"], glossary=glossary, **own,
            )  # fmt: skip
            translator.warm_up()  # the first search pays one-time setup, not a user (any language will do)
            return translator

        return load

    batching = {key: settings[key] for key in ("batch_wait_ms", "max_batch_wait_ms", "max_tokens")}
    served = []
    for name, paths in zip(model_names(checkpoints), checkpoints):
        log.info("loading %s", name)
        batcher = BatchingTranslator(loader(paths), **batching, max_queue=settings["max_queue"],
                                     on_batch=metrics.observe_batch)  # fmt: skip
        served.append(ServedModel(name, batcher))
    return ServedModels(served, **{key: cfg[key] if own[key] is None else None for key in LANGUAGES})


def served_checkpoints(cfg: DictConfig) -> list[list[str]]:
    """The models to serve, each as its checkpoint paths (an ensemble has several): `checkpoint`, then
    each of `models` (a path or a list of paths); settings that belong to one model refused with several."""
    extra = [] if cfg.models is None else list(cfg.models) if OmegaConf.is_list(cfg.models) else [cfg.models]
    checkpoints = [checkpoint_paths(cfg.checkpoint), *(checkpoint_paths(model) for model in extra)]
    if len(checkpoints) > 1:
        for key in ONE_MODEL:
            if cfg[key] is not None:
                raise UserError(f"{key}= belongs to one model and this server has {len(checkpoints)} "
                                "(models=); serve that model on a server of its own")  # fmt: skip
    if cfg.tgt_lang == AUTO:
        raise UserError("tgt_lang=auto: only the source language is detected; name the target language")
    return checkpoints


def read_settings(cfg: DictConfig) -> dict[str, Any]:
    """Every server setting checked before the model loads: one line naming the first bad one."""
    settings: dict[str, Any] = {
        key: number_setting(cfg[key], setting=key, minimum=1, maximum=most) for key, most in LIMITS.items()
    }
    for key, (least, most) in INTEGERS.items():
        settings[key] = number_setting(cfg[key], setting=key, minimum=least, maximum=most)
    for key, (least, most) in FLOATS.items():
        settings[key] = number_setting(cfg[key], setting=key, kind=float, minimum=least, maximum=most)
    settings["num_threads"] = None if cfg.num_threads is None else number_setting(
        cfg.num_threads, setting="num_threads", minimum=1, maximum=4096
    )  # fmt: skip
    settings["max_input_tokens"] = (
        None
        if cfg.max_input_tokens is None
        else number_setting(cfg.max_input_tokens, setting="max_input_tokens", minimum=1)
    )  # fmt: skip  (the model's own maximum is checked when it loads)
    settings["port"] = number_setting(cfg.port, setting="port")
    if settings["port"] > 65535:
        raise UserError(f"port={settings['port']} is not a TCP port; use 1-65535 (0: any free port)")
    settings["api_key"] = api_key_setting(cfg.api_key, cfg.api_key_env)
    settings["cors_origins"] = origins_setting(cfg.cors_origins)
    return settings


def api_key_setting(api_key: Any, api_key_env: Any) -> str | None:
    """The key clients must send, from the settings or from the environment variable they name (which,
    unlike a command line, other users of the machine cannot read in `ps`)."""
    if api_key is not None and api_key_env is not None:
        raise UserError("set api_key or api_key_env, not both")
    if api_key_env is not None:
        name = str(api_key_env)
        api_key = os.environ.get(name)
        if not api_key:
            raise UserError(f"api_key_env={name}, but the environment variable {name} is not set or empty")
    if api_key is not None and not re.fullmatch(r"[!-~]+", str(api_key)):
        raise UserError("the API key must be printable ASCII without spaces (it travels in an HTTP header)")
    return None if api_key is None else str(api_key)


def origins_setting(value: Any) -> list[str]:
    """The web origins whose pages may call the API (CORS): a list of scheme://host[:port], or *."""
    origins = [] if value is None else [value] if isinstance(value, str) else list(value)
    for origin in origins:
        if origin != "*" and not (isinstance(origin, str) and ORIGIN.fullmatch(origin)):
            raise UserError(
                f"cors_origins: {origin!r} is not an origin; use scheme://host[:port] with no path or "
                "trailing slash (https://example.org), or *"
            )
    return [str(origin) for origin in origins]


def run_server(app: Any, *, host: str, port: int, graceful_s: float) -> None:
    """uvicorn until SIGTERM/SIGINT: requests in flight get up to `graceful_s` to finish; a second
    signal exits at once (status 128 + signal)."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.should_exit:
                log.warning("stopping at once: requests in flight get no answer")
                os._exit(128 + sig)  # no clean-up: the model thread may be inside a search
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            timeout_graceful_shutdown=max(1, round(graceful_s)))  # fmt: skip
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal to the handler that was
    # installed before it ran. With this one, a graceful stop ends the command normally (exit status 0).
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
    server = Server(config)
    server.run()
    if not server.started:
        raise UserError(f"cannot listen on {host}:{port} (the reason is logged above); pick another port")


REFUSED = {"max_batch_tokens": "max_tokens"}  # renamed a release ago: a one-line error naming the new key
main = command_main(serve, command="seq2seq-serve", config_name="serve", refused=REFUSED)


if __name__ == "__main__":
    main()
