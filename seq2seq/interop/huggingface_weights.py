"""Hugging Face MarianMT / M2M100 weights and ours, both ways: the name map, and the weight files.

Both architectures name their parameters alike (BART's names). Ours fuse projections: a
self-attention's `qkv` is the rows of q_proj, k_proj and v_proj stacked, a cross-attention's `kv`
those of k_proj and v_proj, so one of our tensors is one or more of theirs concatenated along the
rows, and splits back into them. Layer norms keep their places: `self_attn_layer_norm` is our
self-attention block's norm (applied before the sublayer in pre-norm models, after the residual sum
in post-norm ones), `encoder_attn_layer_norm` the cross-attention block's, `final_layer_norm` the
feed-forward block's; a pre-norm stack's closing `layer_norm` is our `final_norm`.

Embeddings: `model.shared` when the encoder and decoder share one matrix, else each stack's
`embed_tokens`; `lm_head` only when untied; MarianMT's `final_logits_bias` (1, V) is our `output.bias`
(V,). MarianMT's sinusoid tables (`embed_positions.weight`) are computed, not learned: recent
transformers versions do not save them, older files hold them, and then they must equal ours.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from seq2seq.errors import UserError
from seq2seq.nn.positional import sinusoid_table

SAFETENSORS_FILE = "model.safetensors"
TORCH_FILE = "pytorch_model.bin"
INDEX_SUFFIX = ".index.json"  # sharded weights: model.safetensors.index.json, pytorch_model.bin.index.json
_SELF = ("q_proj", "k_proj", "v_proj")
_CROSS_KV = ("k_proj", "v_proj")
_POSITION_TOLERANCE = 1e-3  # stored sinusoids were computed in float64 by numpy, ours in float32
# Buffers older files may hold that transformers never reads (fairseq's sinusoid caches of M2M100).
_UNREAD_SUFFIXES = (".embed_positions.weights", ".embed_positions._float_tensor")


def _linear(ours: str, theirs: list[str]) -> list[tuple[str, list[str]]]:
    return [(f"{ours}.{part}", [f"{name}.{part}" for name in theirs]) for part in ("weight", "bias")]


def _encoder_layer(ours: str, theirs: str) -> list[tuple[str, list[str]]]:
    return [
        *_linear(f"{ours}.self_attn.qkv", [f"{theirs}.self_attn.{p}" for p in _SELF]),
        *_linear(f"{ours}.self_attn.out", [f"{theirs}.self_attn.out_proj"]),
        *_linear(f"{ours}.attn_block.norm", [f"{theirs}.self_attn_layer_norm"]),
        *_feed_forward(ours, theirs),
    ]


def _decoder_layer(ours: str, theirs: str) -> list[tuple[str, list[str]]]:
    return [
        *_linear(f"{ours}.self_attn.qkv", [f"{theirs}.self_attn.{p}" for p in _SELF]),
        *_linear(f"{ours}.self_attn.out", [f"{theirs}.self_attn.out_proj"]),
        *_linear(f"{ours}.self_block.norm", [f"{theirs}.self_attn_layer_norm"]),
        *_linear(f"{ours}.cross_attn.q", [f"{theirs}.encoder_attn.q_proj"]),
        *_linear(f"{ours}.cross_attn.kv", [f"{theirs}.encoder_attn.{p}" for p in _CROSS_KV]),
        *_linear(f"{ours}.cross_attn.out", [f"{theirs}.encoder_attn.out_proj"]),
        *_linear(f"{ours}.cross_block.norm", [f"{theirs}.encoder_attn_layer_norm"]),
        *_feed_forward(ours, theirs),
    ]


def _feed_forward(ours: str, theirs: str) -> list[tuple[str, list[str]]]:
    return [
        *_linear(f"{ours}.ffn.up", [f"{theirs}.fc1"]),
        *_linear(f"{ours}.ffn.down", [f"{theirs}.fc2"]),
        *_linear(f"{ours}.ffn_block.norm", [f"{theirs}.final_layer_norm"]),
    ]


def layer_names(settings: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(our name, their names) of every layer and final-norm tensor: ours = their rows concatenated."""
    names = []
    for index in range(settings["encoder_layers"]):
        names += _encoder_layer(f"encoder.layers.{index}", f"model.encoder.layers.{index}")
    for index in range(settings["decoder_layers"]):
        names += _decoder_layer(f"decoder.layers.{index}", f"model.decoder.layers.{index}")
    if settings["norm"] == "pre":
        names += _linear("encoder.final_norm", ["model.encoder.layer_norm"])
        names += _linear("decoder.final_norm", ["model.decoder.layer_norm"])
    return names


def embedding_names(settings: dict[str, Any]) -> dict[str, list[str]]:
    """Our embedding and output tensors -> the names they may have in a Hugging Face file, first the one
    transformers writes today (tied names are written once; older files repeat them)."""
    shared = ["model.shared.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"]
    if settings["share_embeddings"]:
        names = {"encoder.embedding.weight": shared, "decoder.embedding.weight": shared}
    else:
        names = {
            "encoder.embedding.weight": ["model.encoder.embed_tokens.weight"],
            "decoder.embedding.weight": ["model.decoder.embed_tokens.weight"],
        }
    names["output.weight"] = (
        names["decoder.embedding.weight"] if settings["share_decoder_output"] else ["lm_head.weight"]
    )
    if settings.get("output_bias"):
        names["output.bias"] = ["final_logits_bias"]
    return names


# ------------------------------------------------------------------------------------ import
def ours_from_huggingface(
    weights: dict[str, Tensor], settings: dict[str, Any], where: str
) -> dict[str, Tensor]:
    """Our state dict (float32) from a Hugging Face one. Missing, unknown or misshapen tensors are a
    one-line UserError naming the first; `where` names the directory in it."""
    used: set[str] = set()
    state: dict[str, Tensor] = {}
    for ours, theirs in layer_names(settings):
        missing = [name for name in theirs if name not in weights]
        if missing:
            raise UserError(f"{where} lacks the weight {missing[0]} that config.json's model needs; "
                            "the weight files are incomplete or belong to another model")  # fmt: skip
        state[ours] = torch.cat([weights[name].float() for name in theirs], dim=0)
        used.update(theirs)
    for ours, candidates in embedding_names(settings).items():
        found = [name for name in candidates if name in weights]
        if not found:
            raise UserError(f"{where} lacks the weight {candidates[0]}; the weight files are incomplete")
        tensor = weights[found[0]].float()
        state[ours] = tensor.reshape(-1) if ours == "output.bias" else tensor
        used.update(found)
    used |= _checked_positions(weights, settings, where)
    if settings["share_decoder_output"]:
        used.add("lm_head.weight")  # tied: transformers ties it to the embedding, whatever a file holds
    unknown = sorted(name for name in set(weights) - used if not name.endswith(_UNREAD_SUFFIXES))
    if unknown:
        raise UserError(f"{where} holds the weight {unknown[0]}, which config.json's model does not have; "
                        "the config and the weights do not match")  # fmt: skip
    return state


def _checked_positions(weights: dict[str, Tensor], settings: dict[str, Any], where: str) -> set[str]:
    """Stored sinusoid tables (older MarianMT files), which must be the ones we compute."""
    stored = {name for name in weights if name.endswith(".embed_positions.weight")}
    for name in sorted(stored):
        table = weights[name].float()  # (P, D)
        offset = int(settings["position_offset"])
        expected = sinusoid_table(torch.arange(table.shape[0]) - offset, settings["d_model"],
                                  settings["sinusoid_layout"])  # fmt: skip
        rows = slice(offset, None)  # rows before the offset (the pad id's and below) are never read
        if table.shape != expected.shape or (table[rows] - expected[rows]).abs().max() > _POSITION_TOLERANCE:
            layout = settings["sinusoid_layout"]
            raise UserError(f"{where} holds {name}, which is not the {layout} sinusoid table (learned "
                            "positions?); this model cannot be imported")  # fmt: skip
    return stored


def check_shapes(state: dict[str, Tensor], expected: dict[str, Tensor], where: str) -> None:
    """Every tensor of `state` has the shape the model built from config.json expects."""
    for name, tensor in expected.items():
        if name in state and state[name].shape != tensor.shape:
            raise UserError(
                f"{where}: the weight for {name} has shape {tuple(state[name].shape)}, but config.json's "
                f"model needs {tuple(tensor.shape)}; the config and the weights do not match"
            )


# ------------------------------------------------------------------------------------ export
def huggingface_from_ours(state: dict[str, Tensor], settings: dict[str, Any]) -> dict[str, Tensor]:
    """The tensors a Hugging Face file of our model holds, named as save_pretrained names them (tied
    matrices once), each contiguous and owning its memory (safetensors stores no shared tensors)."""
    weights: dict[str, Tensor] = {}
    for ours, theirs in layer_names(settings):
        for name, part in zip(theirs, state[ours].chunk(len(theirs), dim=0)):
            weights[name] = part
    if settings["share_embeddings"]:
        weights["model.shared.weight"] = state["encoder.embedding.weight"]
    else:
        weights["model.encoder.embed_tokens.weight"] = state["encoder.embedding.weight"]
        weights["model.decoder.embed_tokens.weight"] = state["decoder.embedding.weight"]
    if not settings["share_decoder_output"]:
        weights["lm_head.weight"] = state["output.weight"]
    if settings.get("output_bias"):
        weights["final_logits_bias"] = state["output.bias"].reshape(1, -1)  # (1, V)
    return {name: tensor.detach().float().contiguous().clone() for name, tensor in weights.items()}


# ------------------------------------------------------------------------------------ files
def weight_files(directory: Path) -> list[Path]:
    """The weight files of a Hugging Face directory: model.safetensors, else pytorch_model.bin, either
    possibly sharded (its .index.json names the shards). None is a one-line UserError."""
    directory = Path(directory)
    for name in (SAFETENSORS_FILE, TORCH_FILE):
        if (directory / name).is_file():
            return [directory / name]
        index = directory / (name + INDEX_SUFFIX)
        if index.is_file():
            return [directory / shard for shard in _shards(index)]
    raise UserError(f"{directory} has no weights: neither {SAFETENSORS_FILE} nor {TORCH_FILE} (nor a sharded "
                    f"*{INDEX_SUFFIX}); pass the directory save_pretrained wrote")  # fmt: skip


def read_weights(files: list[Path]) -> dict[str, Tensor]:
    """Every tensor of `files` (weight_files' answer), as stored."""
    weights: dict[str, Tensor] = {}
    for path in files:
        reader = _read_safetensors if path.name.endswith(".safetensors") else _read_torch
        weights.update(reader(path))
    return weights


def _shards(index: Path) -> list[str]:
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        shards = sorted(set(weight_map.values()))
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
        raise UserError(f"{index} is not a valid weight index ({type(error).__name__}); restore it") from None
    missing = [shard for shard in shards if not (index.parent / shard).is_file()]
    if missing:
        raise UserError(f"{index} names the shard {missing[0]}, which is missing; download it too")
    return shards


def _read_safetensors(path: Path) -> dict[str, Tensor]:
    safetensors = import_safetensors()
    try:
        return dict(safetensors.load_file(str(path), device="cpu"))
    except Exception as error:  # safetensors raises its own SafetensorError (and OSError) on bad files
        detail = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        raise UserError(f"{path} is not a readable safetensors file ({detail}); download it again") from None


def _read_torch(path: Path) -> dict[str, Tensor]:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as error:
        detail = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        raise UserError(
            f"{path} is not a readable PyTorch weight file ({detail}); download it again"
        ) from None
    if not isinstance(state, dict) or not all(isinstance(v, Tensor) for v in state.values()):
        raise UserError(f"{path} does not hold a state dict of tensors; pass a model's weight file")
    return state


def write_safetensors(weights: dict[str, Tensor], path: Path) -> None:
    """model.safetensors, with the metadata transformers expects ({"format": "pt"})."""
    import_safetensors().save_file(weights, str(path), metadata={"format": "pt"})


def import_safetensors() -> Any:
    """safetensors.torch, or a one-line UserError saying how to install it."""
    try:
        import safetensors.torch
    except ImportError:
        raise UserError("reading and writing Hugging Face weights needs safetensors; "
                        "pip install 'seq2seq[huggingface]'") from None  # fmt: skip
    return safetensors.torch
