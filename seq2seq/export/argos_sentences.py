"""The sentence splitter an Argos Translate package carries: punctuation rules written as a MiniSBD model.

argostranslate 1.11 splits each paragraph into sentences before translating them, by default with
MiniSBD: Stanza's character tagger run by onnxruntime from an ONNX file, the one in the package's
minisbd/ folder if it has one, else a trained model for the source language that it downloads. A
package that brings its own file needs nothing from the network, and that file need not be a trained
tagger: MiniSBD only asks it for one label per character (0: inside a sentence, 2: the sentence ends
here) and reads its vocabulary and settings from the file's metadata. So this module writes a small
graph that labels characters by rule, in every language at once:

- a stop (. ! ? … and the stops of other scripts: ؟ ۔ । ॥ ։ ። ፧) ends a sentence when whitespace (or
  the end of the text) follows, unless the next word starts with a lowercase letter ("e.g. this",
  "etc. and"), where it is an abbreviation's;
- a full-width stop (。！？) ends one with or without whitespace after it (Chinese and Japanese);
- quotes and brackets right after a stop belong to the sentence it ends ('He said "No." Then').

Abbreviations followed by a capital ("Mr. Smith") do split: rules have no list of them.

The graph (ONNX opset 13, built with the onnx package: the `export` extra) maps each character to its
class (CLASSES), reads the classes of the previous, this and the next two characters through shifted
copies of the padded input, and looks their combination up in a table of labels built by `_label`.
Shapes: units (B, N) int64 character ids -> logits (B, N, 3), whose argmax is the label.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np

from seq2seq.errors import UserError

OTHER, SPACE, STOP, FULL_STOP, CLOSER, LOWER = range(6)  # a character's class
CLASSES = 6
STOPS = ".!?…؟۔।॥։።፧"
FULL_STOPS = "。！？｡"
CLOSERS = "\"'”’»)]}」』）】›"
SENTENCE_END = 2  # MiniSBD's label for the last character of a sentence
LABELS = 3  # 0 inside, 1 a token's end (never used), 2 a sentence's end
PAD, UNK = "<PAD>", "<UNK>"  # MiniSBD's ids 0 and 1: padding (read as the text's end) and any other character
OPSET, IR_VERSION = 13, 8
INT64_MAX = 2**63 - 1


def write_sentence_splitter(path: Path, language: str) -> None:
    """The splitter as an ONNX file at `path`, which MiniSBD's SBDetect (and so argostranslate) loads;
    `language` is recorded as the model's language code."""
    units = [PAD, UNK, *_special_characters()]
    classes = np.array([SPACE, OTHER, *(_class_of(unit) for unit in units[2:])], dtype=np.int64)
    config = {"skip_newline": False, "max_seqlen": 1000, "no_ssplit": False, "batch_size": 32,
              "feat_funcs": [], "use_dictionary": False, "num_dict_feat": 0}  # fmt: skip
    vocab = {"lang": language, "idx": 0, "cutoff": 0, "lower": False,
             "_unit2id": {unit: index for index, unit in enumerate(units)}, "_id2unit": units}  # fmt: skip
    metadata = {"lang_code": language, "config": json.dumps(config), "vocab": json.dumps(vocab),
                "lexicon": "null"}  # fmt: skip
    path.write_bytes(_model(classes, _label_table(), metadata))


def _special_characters() -> list[str]:
    """Every character whose class is not OTHER: whitespace, stops, closers and lowercase letters."""
    return [c for c in map(chr, range(sys.maxunicode + 1)) if _class_of(c) != OTHER]


def _class_of(character: str) -> int:
    if character.isspace():
        return SPACE
    if character in STOPS:
        return STOP
    if character in FULL_STOPS:
        return FULL_STOP
    if character in CLOSERS:
        return CLOSER
    return LOWER if character.islower() else OTHER


def _label(previous: int, current: int, after: int, then: int) -> int:
    """The label of a character of class `current` between `previous` and the next two, `after` and
    `then`: whether a sentence ends with it."""
    if current in (STOP, FULL_STOP):
        stop = current
    elif current == CLOSER and previous in (STOP, FULL_STOP):
        stop = previous
    else:
        return 0
    if after in (STOP, FULL_STOP, CLOSER):
        return 0  # the sentence ends with what follows ("?!", '."')
    if stop == FULL_STOP:
        return SENTENCE_END
    return SENTENCE_END if after == SPACE and then != LOWER else 0


def _label_table() -> np.ndarray:
    """(CLASSES ** 4, LABELS) logits: row ((p * C + c) * C + a) * C + t is the one-hot label of _label(p, c,
    a, t)."""
    table = np.zeros((CLASSES**4, LABELS), dtype=np.float32)
    for row, classes in enumerate(itertools.product(range(CLASSES), repeat=4)):
        table[row, _label(*classes)] = 1.0
    return table


def _model(classes: np.ndarray, labels: np.ndarray, metadata: dict[str, str]) -> bytes:
    """The ONNX model: units (B, N) -> logits (B, N, 3), the classes of the characters at offsets -1, 0, 1
    and 2 (padding beyond the text) combined into a row of `labels`; `metadata` as its metadata_props."""
    try:
        from onnx import TensorProto, checker, helper, numpy_helper
    except ImportError:
        raise UserError(
            "target=argos writes its sentence splitter with onnx; pip install 'seq2seq[export]'"
        ) from None

    constants = {
        "classes": classes, "labels": labels, "pads": np.array([0, 1, 0, 2], dtype=np.int64),
        "axis": np.array([1], dtype=np.int64), "end": np.array([INT64_MAX], dtype=np.int64),
        "count": np.array(CLASSES, dtype=np.int64),
        **{f"at{i}": np.array([i], dtype=np.int64) for i in range(4)},
        **{f"to{i}": np.array([i - 3], dtype=np.int64) for i in range(3)},
    }  # fmt: skip
    node = helper.make_node
    nodes = [
        node("Pad", ["units", "pads"], ["padded"]),  # (B, N + 3): one id before the text, two after
        node("Gather", ["classes", "padded"], ["class"]),
        *(node("Slice", ["class", f"at{i}", f"to{i}", "axis"], [f"class{i}"]) for i in range(3)),
        node("Slice", ["class", "at3", "end", "axis"], ["class3"]),  # (B, N) each: offsets -1, 0, 1, 2
    ]
    row = "class0"
    for i in (1, 2, 3):  # row = ((class0 * C + class1) * C + class2) * C + class3
        nodes += [
            node("Mul", [row, "count"], [f"scaled{i}"]),
            node("Add", [f"scaled{i}", f"class{i}"], [f"row{i}"]),
        ]
        row = f"row{i}"
    nodes.append(node("Gather", ["labels", row], ["logits"]))  # (B, N, 3)
    inputs = [  # MiniSBD feeds "features" too; the rules do not read them
        helper.make_tensor_value_info("units", TensorProto.INT64, ["batch", "length"]),
        helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", "length", "features"]),
    ]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "length", LABELS])
    initializers = [numpy_helper.from_array(value, name) for name, value in constants.items()]
    graph = helper.make_graph(nodes, "sentence_rules", inputs, [output], initializers)
    model = helper.make_model(graph, producer_name="seq2seq", opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    helper.set_model_props(model, metadata)
    checker.check_model(model)
    return model.SerializeToString()


__all__ = ["CLASSES", "write_sentence_splitter"]
