"""A Hugging Face model's config.json and our model settings, both ways.

Two architectures map onto our encoder-decoder exactly:

* MarianMTModel (`model_type: marian`, the Opus-MT models): post-norm layers without a final norm,
  "swish" (SiLU), gelu or relu feed-forward, token embeddings times sqrt(d_model) when
  `scale_embedding`, sinusoids of our standard layout counted from 0, and `final_logits_bias` added
  to the logits (our `output_bias`). The decoder starts from `decoder_start_token_id` (the pad id).
* M2M100ForConditionalGeneration (`model_type: m2m_100`, M2M100 and NLLB): pre-norm layers with a
  final layer norm per stack, one shared embedding matrix, fairseq's sinusoids counted from
  pad_token_id + 1 (HF numbers real tokens pad + 1, pad + 2, ... whatever the padding; we right-pad,
  so a real token's column + offset is exactly that), no output bias.

Everything else in a config either has no effect on the computation (layerdrop, init_std, use_cache),
is a BART option these models' code never reads (`normalize_before` and the like: imported as
transformers computes, with one log line), or is refused by name (one-line UserError) before anything is
written. One such refusal: an M2M100 whose decoder starts from the pad token, which its position
embeddings treat as padding (_check_decoder_start).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError

log = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
GENERATION_CONFIG_FILE = "generation_config.json"
MARIAN = "marian"  # config.json's model_type
M2M100 = "m2m_100"
ARCHITECTURES = {MARIAN: "MarianMTModel", M2M100: "M2M100ForConditionalGeneration"}
# Hugging Face's activation_function names -> ours; gelu is the exact (erf) one in both.
ACTIVATIONS_IN = {"swish": "silu", "silu": "silu", "gelu": "gelu", "relu": "relu"}
ACTIVATIONS_OUT = {"silu": "swish", "gelu": "gelu", "relu": "relu"}
# Options of the BART family that these two models' code never reads: whatever a config sets, transformers
# computes as the values here, and so does the import (one log line names what it ignores).
_IGNORED_OPTIONS = {
    MARIAN: {"normalize_before": False, "normalize_embedding": False, "add_final_layer_norm": False,
             "static_position_embeddings": True, "add_bias_logits": False},
    M2M100: {"normalize_before": True, "normalize_embedding": False, "add_final_layer_norm": True,
             "static_position_embeddings": True, "add_bias_logits": False},
}  # fmt: skip


def read_config(directory: Path) -> dict[str, Any]:
    """config.json of a Hugging Face model directory; a missing or corrupt file is a one-line UserError."""
    directory = Path(directory)
    if not directory.is_dir():
        what = "is a file" if directory.exists() else "does not exist"
        raise UserError(f"{directory} {what}; pass a Hugging Face model directory (config.json + weights)")
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise UserError(f"{directory} has no {CONFIG_FILE}; pass a Hugging Face model directory "
                        "(as written by save_pretrained)")  # fmt: skip
    return json_object(path)


def json_object(path: Path, *, required: bool = True) -> dict[str, Any]:
    """A model directory's JSON file holding an object (config.json, vocab.json, ...); {} for a missing
    file that is not `required`. Missing, corrupt or not an object: a one-line UserError."""
    if not path.is_file():
        if required:
            raise UserError(f"{path.parent}: no {path.name}; restore it")
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{path} is not valid JSON ({_first_line(error)}); restore the file") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} holds a {type(data).__name__}, not a JSON object; restore the file")
    return data


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def model_type_of(config: dict[str, Any]) -> str:
    """MARIAN or M2M100, after checking `model_type` and `architectures` name a model we can run."""
    model_type = config.get("model_type")
    if model_type not in ARCHITECTURES:
        raise UserError(
            f"config.json has model_type={model_type!r}, which cannot be imported; supported: "
            f"{', '.join(f'{t} ({a})' for t, a in ARCHITECTURES.items())}"
        )
    expected = ARCHITECTURES[model_type]
    architectures = config.get("architectures") or [expected]
    if architectures != [expected]:
        raise UserError(
            f"config.json names architectures={architectures}, not [{expected!r}]: only the translation "
            f"model {expected} of model_type {model_type} can be imported"
        )
    if config.get("is_encoder_decoder", True) is not True:
        raise UserError("config.json sets is_encoder_decoder=false; only encoder-decoder models import")
    return model_type


def _integer(config: dict[str, Any], key: str) -> int:
    value = config.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UserError(f"config.json has {key}={value!r}; it must be a non-negative integer")
    return value


def _number(config: dict[str, Any], key: str, default: float) -> float:
    value = config.get(key, default)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise UserError(f"config.json has {key}={value!r}; it must be a number")
    return float(value)


def _check_symmetric(config: dict[str, Any]) -> None:
    """One width, head count and feed-forward size for both stacks (our builder takes one of each)."""
    for encoder_key, decoder_key in (
        ("encoder_attention_heads", "decoder_attention_heads"),
        ("encoder_ffn_dim", "decoder_ffn_dim"),
    ):
        encoder, decoder = config.get(encoder_key), config.get(decoder_key)
        if encoder != decoder:
            raise UserError(f"config.json has {encoder_key}={encoder} but {decoder_key}={decoder}; "
                            "our stacks share one value, so this model cannot be imported")  # fmt: skip


def _log_ignored_options(config: dict[str, Any], model_type: str) -> None:
    """One log line for the options `config` sets that transformers' code ignores (_IGNORED_OPTIONS)."""
    ignored = {key: value for key, value in _IGNORED_OPTIONS[model_type].items()
               if key in config and config[key] != value}  # fmt: skip
    if ignored:
        log.warning(
            "config.json sets %s, which %s ignores: imported as transformers computes it (%s)",
            ", ".join(f"{key}={json.dumps(config[key])}" for key in ignored),
            ARCHITECTURES[model_type],
            ", ".join(f"{key}={json.dumps(value)}" for key, value in ignored.items()),
        )


def _check_decoder_start(config: dict[str, Any], model_type: str) -> None:
    """M2M100's positions give every pad token padding's position: after a decoder start that is the pad
    token, transformers numbers the target from pad + 1 in a forward pass but from pad + 2 in cached
    generation, so there is no one computation for our model to reproduce."""
    start, pad = config.get("decoder_start_token_id"), config.get("pad_token_id")
    if model_type == M2M100 and start is not None and start == pad:
        raise UserError(
            f"config.json has decoder_start_token_id={start}, the pad_token_id, which M2M100/NLLB position "
            "embeddings treat as padding (transformers' forward and cached generate then disagree); set "
            f"decoder_start_token_id to eos_token_id ({config.get('eos_token_id')}), as M2M100 and NLLB start"
        )


def _activation(config: dict[str, Any]) -> str:
    name = config.get("activation_function", "gelu" if config.get("model_type") == MARIAN else "relu")
    if name not in ACTIVATIONS_IN:
        raise UserError(f"config.json has activation_function={name!r}, which our models do not have; "
                        f"supported: {', '.join(ACTIVATIONS_IN)}")  # fmt: skip
    return ACTIVATIONS_IN[name]


def _vocabularies(config: dict[str, Any], model_type: str) -> dict[str, Any]:
    """Vocabulary sizes and embedding sharing: build_model's share_embeddings / share_decoder_output."""
    vocab_size = _integer(config, "vocab_size")
    shared = model_type == M2M100 or bool(config.get("share_encoder_decoder_embeddings", True))
    decoder_vocab_size = (
        vocab_size if model_type == M2M100 else config.get("decoder_vocab_size") or vocab_size
    )
    if shared and decoder_vocab_size != vocab_size:
        raise UserError(f"config.json shares the encoder and decoder embeddings but has vocab_size="
                        f"{vocab_size} and decoder_vocab_size={decoder_vocab_size}; fix one")  # fmt: skip
    tied = bool(config.get("tie_word_embeddings", True))
    if shared and not tied:
        raise UserError(
            "config.json shares the encoder and decoder embeddings but unties the output projection "
            "(tie_word_embeddings=false); our models tie all three or separate the encoder's only"
        )
    return {"src_vocab_size": vocab_size, "tgt_vocab_size": int(decoder_vocab_size),
            "share_embeddings": shared, "share_decoder_output": tied}  # fmt: skip


def model_settings(config: dict[str, Any]) -> dict[str, Any]:
    """build_model's arguments for the model config.json describes (model_type_of checked first)."""
    model_type = model_type_of(config)
    _log_ignored_options(config, model_type)
    _check_decoder_start(config, model_type)
    _check_symmetric(config)
    pad_id = _integer(config, "pad_token_id")
    d_model, heads = _integer(config, "d_model"), _integer(config, "encoder_attention_heads")
    if heads == 0 or d_model % heads:
        raise UserError(
            f"config.json has d_model={d_model} and {heads} attention heads; heads must divide it"
        )
    marian = model_type == MARIAN
    return {
        **_vocabularies(config, model_type),
        "pad_id": pad_id,
        "d_model": d_model,
        "n_heads": heads,
        "ffn_dim": _integer(config, "encoder_ffn_dim"),
        "encoder_layers": _integer(config, "encoder_layers"),
        "decoder_layers": _integer(config, "decoder_layers"),
        "dropout": _number(config, "dropout", 0.1),
        "attention_dropout": _number(config, "attention_dropout", 0.0),
        "activation_dropout": _number(config, "activation_dropout", 0.0),
        "positional": "sinusoidal",
        "sinusoid_layout": "standard" if marian else "fairseq",
        "position_offset": 0 if marian else pad_id + 1,
        "norm": "post" if marian else "pre",
        "activation": _activation(config),
        "scale_embeddings": bool(config.get("scale_embedding", not marian)),
        "output_bias": marian,
        "max_positions": _integer(config, "max_position_embeddings"),
    }


def special_ids(config: dict[str, Any]) -> dict[str, int]:
    """The ids the tokenizers must agree with: pad, eos and the decoder's first token."""
    eos = config.get("eos_token_id")
    if isinstance(eos, list) and len(eos) == 1:
        eos = eos[0]
    ids = {
        "pad": config.get("pad_token_id"),
        "eos": eos,
        "decoder_start": config.get("decoder_start_token_id"),
    }
    for name, value in ids.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise UserError(f"config.json has {name}_token_id={value!r}; it must be one token id")
    return ids


# ---------------------------------------------------------------------------------------- export
def export_model_type(model_config: dict[str, Any]) -> str:
    """The architecture our model exports as: MarianMT for post-norm models, M2M100 for pre-norm ones."""
    return MARIAN if model_config.get("norm") == "post" else M2M100


def _common_problems(config: dict[str, Any]) -> list[str]:
    problems = []
    if config.get("positional", "sinusoidal") != "sinusoidal":
        problems.append(f"model.positional={config['positional']} (both architectures add sinusoids)")
    if config.get("window") is not None:
        problems.append(f"model.window={config['window']} (local self-attention windows)")
    if int(config.get("cross_downsample", 1)) != 1:
        problems.append(
            f"model.cross_downsample={config['cross_downsample']} (pooled cross-attention memory)"
        )
    if config.get("activation") not in ACTIVATIONS_OUT:
        problems.append(
            f"model.activation={config.get('activation')} (supported: {', '.join(ACTIVATIONS_OUT)})"
        )
    return problems


def _marian_problems(config: dict[str, Any]) -> list[str]:
    problems = []
    if config.get("sinusoid_layout", "standard") != "standard" or int(config.get("position_offset", 0)):
        problems.append(
            f"model.sinusoid_layout={config.get('sinusoid_layout')} with position_offset="
            f"{config.get('position_offset')} in a post-norm model (MarianMT counts standard sinusoids "
            "from 0)"
        )
    return problems


def _m2m100_problems(config: dict[str, Any]) -> list[str]:
    problems = []
    offset = int(config["pad_id"]) + 1
    if config.get("sinusoid_layout") != "fairseq" or int(config.get("position_offset", 0)) != offset:
        problems.append(
            f"model.norm=pre with sinusoid_layout={config.get('sinusoid_layout', 'standard')} and "
            f"position_offset={config.get('position_offset', 0)} (pre-norm exports as M2M100, whose "
            f"positions are fairseq sinusoids counted from pad_id + 1 = {offset}; post-norm models export as "
            "MarianMT)"
        )
    if not config.get("share_embeddings", True):
        problems.append("model.share_embeddings=false in a pre-norm model (M2M100 has one embedding matrix)")
    if config.get("output_bias"):
        problems.append("model.output_bias=true in a pre-norm model (M2M100 has no final_logits_bias)")
    return problems


def export_problems(model_config: dict[str, Any]) -> list[str]:
    """The settings of `model_config` (a checkpoint's) that neither MarianMT nor M2M100 expresses."""
    if model_config.get("family", "encoder_decoder") != "encoder_decoder":
        return [f"model family {model_config['family']} (MarianMT and M2M100 are encoder-decoders)"]
    specific = _marian_problems if export_model_type(model_config) == MARIAN else _m2m100_problems
    return _common_problems(model_config) + specific(model_config)


def huggingface_config(model_config: dict[str, Any], token_ids: dict[str, Any]) -> dict[str, Any]:
    """config.json for our model (export_problems empty); `token_ids`: the tokenizer's special ids as
    config.json keys (pad_token_id, eos_token_id, decoder_start_token_id, ...)."""
    model_type = export_model_type(model_config)
    c = model_config
    config: dict[str, Any] = {
        "architectures": [ARCHITECTURES[model_type]],
        "model_type": model_type,
        "activation_function": ACTIVATIONS_OUT[c["activation"]],
        "d_model": c["d_model"],
        "encoder_layers": c["encoder_layers"], "decoder_layers": c["decoder_layers"],
        "encoder_attention_heads": c["n_heads"], "decoder_attention_heads": c["n_heads"],
        "encoder_ffn_dim": c["ffn_dim"], "decoder_ffn_dim": c["ffn_dim"],
        "encoder_layerdrop": 0.0, "decoder_layerdrop": 0.0,
        "dropout": c["dropout"], "attention_dropout": c["attention_dropout"],
        "activation_dropout": c["activation_dropout"],
        "max_position_embeddings": c["max_positions"],
        "scale_embedding": bool(c.get("scale_embeddings", True)),
        "vocab_size": c["src_vocab_size"],
        "tie_word_embeddings": bool(c["share_decoder_output"]),
        "is_encoder_decoder": True, "init_std": 0.02, "use_cache": True, "dtype": "float32",
        **token_ids,
        "pad_token_id": c["pad_id"],
    }  # fmt: skip
    if model_type == MARIAN:
        config["share_encoder_decoder_embeddings"] = bool(c["share_embeddings"])
        config["decoder_vocab_size"] = c["tgt_vocab_size"]
        config["forced_eos_token_id"] = config["eos_token_id"]  # MarianConfig's default (0) is another id
    return config


def generation_config(
    config: dict[str, Any], *, banned: list[int], forced_bos: int | None, search: SearchOptions
) -> dict[str, Any]:
    """generation_config.json: the token ids of `config`, plus what makes a plain `generate()` search as
    our Translator does with `search` (its defaults), as far as transformers can say it: the tokens our
    searches never produce (`banned`: pad, and bos when it is not eos), the target language's code
    (`forced_bos`), the beam size, stop_early (early_stopping), and the decoder's positions as the length
    cap. What it cannot say: our length penalty (GNMT's ((5 + length) / 6) ** alpha; generate divides by
    length ** length_penalty, equal only at 0), so a model's tuned value is not written, and a length
    limit that grows with the source (max_len_a, max_len_b). Not `_from_model_config`: transformers 4.x
    replaces a file marked so by one derived from config.json (greedy, 20 tokens, nothing banned)."""
    keys = ("bos_token_id", "decoder_start_token_id", "eos_token_id", "forced_eos_token_id", "pad_token_id")
    generation = {key: config[key] for key in keys if key in config}
    generation["bad_words_ids"] = [[token] for token in banned]
    if forced_bos is not None:
        generation["forced_bos_token_id"] = forced_bos
    generation["max_length"] = int(config["max_position_embeddings"])
    generation["num_beams"] = search.beam_size
    generation["early_stopping"] = search.stop_early
    return generation
