"""Hugging Face tokenizer files <-> our tokenizers, both ways.

Reading: a model directory's MarianTokenizer (source.spm, target.spm, vocab.json), M2M100Tokenizer
(sentencepiece.bpe.model, vocab.json) or NllbTokenizer (sentencepiece.bpe.model, with tokenizer.json or
tokenizer_config.json naming the added tokens' ids) becomes two MappedTokenizers, source and target,
giving exactly transformers' ids and text (seq2seq.data.mapped_tokenizer says how). A table padded to
config.json's vocab_size keeps one name per embedding row (fairseq's made-up words).

Writing: the files transformers' AutoTokenizer.from_pretrained needs to load the same tokenizer again,
and the token ids config.json needs. Our own Tokenizer models (pad=0 unk=1 bos=2 eos=3) are written as
a MarianTokenizer: vocab.json maps every piece to its sentencepiece id; a model with two vocabularies
gets MarianTokenizer's separate_vocabs (target_vocab.json). Their ids are then ours (plus eos), with one
exception MarianTokenizer does not let us turn off: a text that starts with ">>xx<<" gets that as one
token (an unknown one) where our encode() splits it into pieces. Their text is ours (decode with
skip_special_tokens=True: unk dropped, the ends stripped, as ours).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from seq2seq.data.mapped_tokenizer import MappedTokenizer, piece_names
from seq2seq.data.tokenizer import Tokenizer
from seq2seq.data.tokenizer_formats import TextTokenizer
from seq2seq.errors import UserError
from seq2seq.interop.huggingface_config import json_object

TOKENIZER_CONFIG = "tokenizer_config.json"
M2M100_CODES = {
    "m2m100": (
        "af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff fi fr fy ga gd gl gu ha "
        "he hi hr ht hu hy id ig ilo is it ja jv ka kk km kn ko lb lg ln lo lt lv mg mk ml mn mr ms my ne "
        "nl no ns oc or pa pl ps pt ro ru sd si sk sl so sq sr ss su sv sw ta th tl tn tr uk ur uz vi wo xh "
        "yi yo zh zu"
    ).split(),
    "wmt21": ["en", "ha", "is", "ja", "cs", "ru", "zh", "de"],
}  # M2M100Tokenizer's FAIRSEQ_LANGUAGE_CODES: token "__xx__" = len(vocab.json) + position
NLLB_CODE = re.compile(r"[a-z]{2,3}_[A-Z][a-z]{3}")  # eng_Latn: NllbTokenizer's language tokens
M2M100_CLASSES = ("M2M100Tokenizer",)
NLLB_CLASSES = ("NllbTokenizer", "NllbTokenizerFast")
MARIAN_CLASSES = ("MarianTokenizer",)
MARIAN_SPECIALS = {"eos": "</s>", "unk": "<unk>", "pad": "<pad>"}  # the classes' default token strings
FAIRSEQ_SPECIALS = {"bos": "<s>", "eos": "</s>", "unk": "<unk>", "pad": "<pad>"}


# ---------------------------------------------------------------------------------------------- reading
def read_tokenizers(directory: Path, config: dict[str, Any]) -> tuple[MappedTokenizer, MappedTokenizer]:
    """(source, target) tokenizers of the Hugging Face model in `directory` (config: its config.json)."""
    directory = Path(directory)
    settings = json_object(directory / TOKENIZER_CONFIG, required=False)
    model_type = config.get("model_type")
    if model_type == "marian":
        return _read_marian(directory, config, settings)
    if model_type == "m2m_100":
        if _is_nllb(directory, settings):
            return _read_nllb(directory, config, settings)
        return _read_m2m100(directory, config, settings)
    raise UserError(f"{directory}: model_type {model_type!r} has no tokenizer we can import; "
                    "supported: marian, m2m_100 (M2M100 and NLLB)")  # fmt: skip


def _is_nllb(directory: Path, settings: dict[str, Any]) -> bool:
    name = settings.get("tokenizer_class")
    if name in NLLB_CLASSES:
        return True
    if name in M2M100_CLASSES:
        return False
    if name is not None:
        raise UserError(f"{directory / TOKENIZER_CONFIG}: tokenizer_class {name!r} is not supported; "
                        f"an m2m_100 model needs {M2M100_CLASSES[0]} or {NLLB_CLASSES[0]}")  # fmt: skip
    return not (directory / "vocab.json").is_file()


def _read_marian(directory: Path, config: dict, settings: dict) -> tuple[MappedTokenizer, MappedTokenizer]:
    _check_class(directory, settings, MARIAN_CLASSES)
    for name in ("source.spm", "target.spm"):
        if not (directory / name).is_file():
            bpe = (directory / "merges.txt").is_file() or not (directory / "vocab.json").is_file()
            why = (
                "OPUS-MT models without sentencepiece files (BPE) cannot be imported" if bpe else "restore it"
            )
            raise UserError(f"{directory}: no {name}: {why}")
    source, target = (directory / "source.spm").read_bytes(), (directory / "target.spm").read_bytes()
    separate = bool(settings.get("separate_vocabs", False))
    src_names = _dense_vocabulary(directory / "vocab.json")
    tgt_names = _dense_vocabulary(directory / "target_vocab.json") if separate else src_names
    names = _token_names(settings, MARIAN_SPECIALS)
    clean_up = bool(settings.get("clean_up_tokenization_spaces", False))

    def side(
        vocabulary: list[str], model: bytes, decode_model: bytes | None, size_key: str
    ) -> MappedTokenizer:
        ids = _special_ids(directory, vocabulary, names)
        languages = {} if separate else {t[2:-2]: i for i, t in enumerate(vocabulary) if _marian_code(t)}
        size = int(config.get(size_key) or config.get("vocab_size") or len(vocabulary))
        fields = dict(
            kind="marian", model=model, decode_model=decode_model,
            vocabulary=_padded(directory, vocabulary, size), hf_size=len(vocabulary),
            pad_id=ids["pad"], eos_id=ids["eos"], unk_id=ids["unk"],
            bos_id=_decoder_start(config, ids["pad"]), specials=ids.values(),
            languages=languages, clean_up_spaces=clean_up,
        )  # fmt: skip
        return _tokenizer(directory, fields)

    # HF decodes with the source model unless the vocabularies are separate (MarianTokenizer._decode)
    return side(src_names, source, None, "vocab_size"), side(
        tgt_names, target, None if separate else source, "decoder_vocab_size"
    )


def _marian_code(token: str) -> bool:
    return token.startswith(">>") and token.endswith("<<") and len(token) > 4


def _read_m2m100(directory: Path, config: dict, settings: dict) -> tuple[MappedTokenizer, MappedTokenizer]:
    model = _required(directory, "sentencepiece.bpe.model").read_bytes()
    vocabulary = _dense_vocabulary(_required(directory, "vocab.json"))
    codes_name = settings.get("language_codes", "m2m100")
    if codes_name not in M2M100_CODES:
        raise UserError(f"{directory / TOKENIZER_CONFIG}: language_codes {codes_name!r} is not one of "
                        f"{', '.join(M2M100_CODES)}")  # fmt: skip
    codes = M2M100_CODES[codes_name]
    languages = {code: len(vocabulary) + i for i, code in enumerate(codes)}
    table = vocabulary + [f"__{code}__" for code in codes]
    names = _token_names(settings, FAIRSEQ_SPECIALS)
    ids = _special_ids(directory, vocabulary, names)
    fields = dict(
        kind="m2m100", model=model, vocabulary=_padded(directory, table, int(config.get("vocab_size") or 0)),
        hf_size=len(table), pad_id=ids["pad"], eos_id=ids["eos"], unk_id=ids["unk"],
        bos_id=_decoder_start(config, ids["eos"]),
        specials=[*ids.values(), *languages.values()], languages=languages,
        clean_up_spaces=bool(settings.get("clean_up_tokenization_spaces", False)),
    )  # fmt: skip
    return _two_sides(directory, fields, settings.get("src_lang") or "en", settings.get("tgt_lang"))


def _read_nllb(directory: Path, config: dict, settings: dict) -> tuple[MappedTokenizer, MappedTokenizer]:
    spm_file = directory / "sentencepiece.bpe.model"
    if not spm_file.is_file():
        raise UserError(f"{directory}: no sentencepiece.bpe.model: NLLB tokenizers without their "
                        "sentencepiece model (tokenizer.json only) cannot be imported")  # fmt: skip
    if settings.get("legacy_behaviour"):
        raise UserError(f"{directory / TOKENIZER_CONFIG}: legacy_behaviour=true (the language code after "
                        "eos) is not supported; use legacy_behaviour=false, the default")  # fmt: skip
    model = spm_file.read_bytes()
    table, added = _nllb_tokens(directory, settings, model)
    languages = {name: index for index, name in added.items() if NLLB_CODE.fullmatch(name)}
    names = _token_names(settings, FAIRSEQ_SPECIALS)
    ids = _special_ids(directory, table, names)
    fields = dict(
        kind="nllb", model=model, vocabulary=_padded(directory, table, int(config.get("vocab_size") or 0)),
        hf_size=len(table), pad_id=ids["pad"], eos_id=ids["eos"], unk_id=ids["unk"],
        bos_id=_decoder_start(config, ids["eos"]), specials=added, languages=languages,
    )  # fmt: skip
    return _two_sides(directory, fields, settings.get("src_lang") or "eng_Latn", settings.get("tgt_lang"))


def _nllb_tokens(directory: Path, settings: dict, model: bytes) -> tuple[list[str], dict[int, str]]:
    """The id table and the special added tokens (id -> name): the BPE vocabulary of tokenizer.json (else
    NllbConverter's: the model's pieces shifted by one), then the added tokens, whose ids are in
    tokenizer_config.json's added_tokens_decoder, else in tokenizer.json."""
    path = directory / "tokenizer.json"
    tokenizer = json_object(path, required=False)
    entries = settings.get("added_tokens_decoder") or {
        str(t.get("id")): t for t in tokenizer.get("added_tokens") or [] if isinstance(t, dict)
    }
    if not entries:
        raise UserError(f"{directory}: no tokenizer.json nor added_tokens_decoder in {TOKENIZER_CONFIG}: the "
                        "ids of NLLB's language tokens are unknown; restore the files")  # fmt: skip
    model_table = tokenizer.get("model") or {"type": "BPE", "vocab": _piece_ids(nllb_base_vocabulary(model))}
    if model_table.get("type") != "BPE" or not isinstance(model_table.get("vocab"), dict):
        raise UserError(f"{path}: not a BPE tokenizer as NllbTokenizer writes; restore the file")
    try:
        vocabulary = {str(piece): int(index) for piece, index in model_table["vocab"].items()}
        added = {
            int(index): str(entry["content"])
            for index, entry in entries.items()
            if entry.get("special", True)
        }
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise UserError(f"{path}: unreadable token table ({error}); restore the file") from None
    vocabulary.update({name: index for index, name in added.items()})
    return _dense(path, vocabulary), added


def _tokenizer(directory: Path, fields: dict[str, Any]) -> MappedTokenizer:
    """MappedTokenizer(**fields); a damaged file (a sentencepiece model that does not load) is a UserError."""
    try:
        return MappedTokenizer(**fields)
    except ValueError as error:
        raise UserError(f"{directory}: {error}; restore the tokenizer files") from None


def _decoder_start(config: dict[str, Any], default: int) -> int:
    value = config.get("decoder_start_token_id")
    return default if value is None else int(value)


def _two_sides(directory: Path, fields: dict, src_lang: str, tgt_lang: str | None):
    languages = fields["languages"]
    for key, code in (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
        if code is not None and code not in languages:
            raise UserError(f"{directory / TOKENIZER_CONFIG}: {key} {code!r} is not one of the tokenizer's "
                            "languages; correct it")  # fmt: skip
    return (
        _tokenizer(directory, {**fields, "language": src_lang}),
        _tokenizer(directory, {**fields, "language": tgt_lang}),
    )


# ---------------------------------------------------------------------------------------------- files
def _required(directory: Path, name: str, *, why: str = "restore it") -> Path:
    path = directory / name
    if not path.is_file():
        raise UserError(f"{directory}: no {name}; {why}")
    return path


def _dense_vocabulary(path: Path) -> list[str]:
    vocabulary = json_object(path, required=True)
    if not all(isinstance(index, int) and not isinstance(index, bool) for index in vocabulary.values()):
        raise UserError(f"{path}: not a token -> id table; restore the file")
    return _dense(path, vocabulary)


def _dense(path: Path, vocabulary: dict[str, int]) -> list[str]:
    """Token names in id order; the ids must be 0..N-1, each once."""
    table = [""] * len(vocabulary)
    for name, index in vocabulary.items():
        if not 0 <= index < len(table) or table[index]:
            raise UserError(f"{path}: token ids are not 0..{len(table) - 1} each once (id {index}); "
                            "restore the file")  # fmt: skip
        table[index] = name
    return table


def _token_names(settings: dict[str, Any], defaults: dict[str, str]) -> dict[str, str]:
    """The special tokens' strings: tokenizer_config.json's eos_token etc., else the class defaults."""
    names = {}
    for key, default in defaults.items():
        value = settings.get(f"{key}_token") or default
        names[key] = str(value.get("content", default) if isinstance(value, dict) else value)
    return names


def _special_ids(directory: Path, vocabulary: list[str], names: dict[str, str]) -> dict[str, int]:
    ids = {}
    for key, name in names.items():
        if name not in vocabulary:
            raise UserError(
                f"{directory}: the {key} token {name!r} is not in the vocabulary; restore the files"
            )
        ids[key] = vocabulary.index(name)
    return ids


def _padded(directory: Path, table: list[str], size: int) -> list[str]:
    """`table` named up to config.json's vocab_size (fairseq's made-up words past the tokenizer's ids)."""
    if size and size < len(table):
        raise UserError(f"{directory}: config.json's vocab_size {size} is smaller than the tokenizer's "
                        f"{len(table)} tokens; the files do not belong together")  # fmt: skip
    taken = set(table)
    extra = (f"madeupword{i:04d}" for i in range(size * 2))
    return table + [name for name in extra if name not in taken][: max(size - len(table), 0)]


def _check_class(directory: Path, settings: dict, classes: tuple[str, ...]) -> None:
    name = settings.get("tokenizer_class")
    if name is not None and name not in classes:
        raise UserError(f"{directory / TOKENIZER_CONFIG}: tokenizer_class {name!r} is not supported for "
                        f"this model; expected {' or '.join(classes)}")  # fmt: skip


# ---------------------------------------------------------------------------------------------- writing
def write_tokenizer_files(directory: Path, src: TextTokenizer, tgt: TextTokenizer) -> dict[str, int]:
    """Write the tokenizer files of (src, tgt) into `directory` so that transformers' AutoTokenizer
    loads a tokenizer with the same ids and text; returns config.json's token entries."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if isinstance(src, Tokenizer) and isinstance(tgt, Tokenizer):
        return _write_own(directory, src, tgt)
    if not (isinstance(src, MappedTokenizer) and isinstance(tgt, MappedTokenizer) and src.kind == tgt.kind):
        raise UserError("the source and target tokenizers are of different kinds; a Hugging Face directory "
                        "needs one tokenizer class for both")  # fmt: skip
    writer = {"marian": _write_marian, "m2m100": _write_m2m100, "nllb": _write_nllb}[src.kind]
    entries = writer(directory, src, tgt)
    entries.update(pad_token_id=tgt.pad_id, eos_token_id=tgt.eos_id, decoder_start_token_id=tgt.bos_id,
                   vocab_size=src.vocab_size)  # fmt: skip
    if tgt.language is not None:
        entries["forced_bos_token_id"] = tgt.prefix[0]
    return entries


def _write_own(directory: Path, src: Tokenizer, tgt: Tokenizer) -> dict[str, int]:
    """Our sentencepiece models as a MarianTokenizer; special tokens are not split out of the text
    (split_special_tokens), as our encode does not: "</s>" in a sentence is text."""
    models = (src.to_bytes(), tgt.to_bytes())
    target = tgt.pieces_of_vocabulary() if models[0] != models[1] else None
    _write_marian_files(
        directory, src, models, (src.pieces_of_vocabulary(), target), {"split_special_tokens": True}
    )
    return {"pad_token_id": tgt.pad_id, "eos_token_id": tgt.eos_id, "bos_token_id": tgt.bos_id,
            "decoder_start_token_id": tgt.bos_id, "forced_eos_token_id": tgt.eos_id,
            "vocab_size": src.vocab_size, "decoder_vocab_size": tgt.vocab_size}  # fmt: skip


def _write_marian(directory: Path, src: MappedTokenizer, tgt: MappedTokenizer) -> dict[str, int]:
    target = tgt.hf_vocabulary() if src.pieces_of_vocabulary() != tgt.pieces_of_vocabulary() else None
    _write_marian_files(directory, src, (src.model_bytes, tgt.model_bytes), (src.hf_vocabulary(), target),
                        {"clean_up_tokenization_spaces": src.clean_up_spaces})  # fmt: skip
    return {
        "bos_token_id": tgt.eos_id,
        "forced_eos_token_id": tgt.eos_id,
        "decoder_vocab_size": tgt.vocab_size,
    }


def _write_marian_files(
    directory: Path,
    src: TextTokenizer,
    models: tuple[bytes, bytes],
    vocabularies: tuple[list[str], list[str] | None],
    settings: dict[str, Any],
) -> None:
    """A MarianTokenizer's files: the (source, target) sentencepiece models, vocab.json, target_vocab.json
    when the target has a vocabulary of its own (separate_vocabs), and tokenizer_config.json with
    `settings` and the special tokens' names."""
    (directory / "source.spm").write_bytes(models[0])
    (directory / "target.spm").write_bytes(models[1])
    _write_json(directory / "vocab.json", _piece_ids(vocabularies[0]))
    if vocabularies[1] is not None:
        _write_json(directory / "target_vocab.json", _piece_ids(vocabularies[1]))
    names = {f"{key}_token": src.id_to_piece(getattr(src, f"{key}_id")) for key in ("eos", "unk", "pad")}
    _write_json(directory / TOKENIZER_CONFIG,
                {"tokenizer_class": "MarianTokenizer", "separate_vocabs": vocabularies[1] is not None,
                 **settings, **names})  # fmt: skip


def _write_m2m100(directory: Path, src: MappedTokenizer, tgt: MappedTokenizer) -> dict[str, int]:
    table = src.hf_vocabulary()
    first_language = min(src.languages.values())
    codes = [code for code, _ in sorted(src.languages.items(), key=lambda item: item[1])]
    codes_name = next((name for name, known in M2M100_CODES.items() if known == codes), None)
    if codes_name is None or first_language + len(codes) != len(table):
        raise UserError("this M2M100 tokenizer's language tokens are not M2M100Tokenizer's m2m100 or wmt21 "
                        "list after the vocabulary; it cannot be written for transformers")  # fmt: skip
    (directory / "sentencepiece.bpe.model").write_bytes(src.model_bytes)
    _write_json(directory / "vocab.json", _piece_ids(table[:first_language]))
    names = _special_names(src)
    _write_json(directory / TOKENIZER_CONFIG,
                {"tokenizer_class": "M2M100Tokenizer", "src_lang": src.language, "tgt_lang": tgt.language,
                 "language_codes": codes_name, "additional_special_tokens": [f"__{c}__" for c in codes],
                 "num_madeup_words": src.vocab_size - len(table),
                 "sep_token": names["eos_token"], "clean_up_tokenization_spaces": src.clean_up_spaces,
                 **names})  # fmt: skip
    return {"bos_token_id": src.piece_to_id(names["bos_token"])}


def _write_nllb(directory: Path, src: MappedTokenizer, tgt: MappedTokenizer) -> dict[str, int]:
    """sentencepiece.bpe.model and the added tokens' ids: transformers converts the model itself."""
    table = src.hf_vocabulary()
    base = nllb_base_vocabulary(src.model_bytes)
    if table[: len(base)] != base:
        raise UserError("this NLLB tokenizer's ids are not its sentencepiece pieces shifted by one; it "
                        "cannot be written for transformers")  # fmt: skip
    (directory / "sentencepiece.bpe.model").write_bytes(src.model_bytes)
    special = {"lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": True}
    mask = {**special, "lstrip": True, "normalized": True}
    added = {str(i): {"content": name, **(mask if name == "<mask>" else special)}
             for i, name in enumerate(table) if i in src.special_ids}  # fmt: skip
    names = _special_names(src)
    _write_json(directory / TOKENIZER_CONFIG,
                {"tokenizer_class": "NllbTokenizer", "added_tokens_decoder": added, "src_lang": src.language,
                 "tgt_lang": tgt.language, "legacy_behaviour": False, "sep_token": names["eos_token"],
                 "cls_token": names["bos_token"], "mask_token": "<mask>",
                 "additional_special_tokens": sorted(src.languages, key=src.languages.__getitem__),
                 **names})  # fmt: skip
    return {"bos_token_id": src.piece_to_id(names["bos_token"])}


def nllb_base_vocabulary(model: bytes) -> list[str]:
    """NllbTokenizer's ids of a sentencepiece model's pieces (transformers' NllbConverter): <s> <pad>
    </s> <unk>, then the model's other pieces in its order."""
    names = ["<s>", "<pad>", "</s>", "<unk>"]
    return names + [piece for piece in piece_names(model) if piece not in names]


def _special_names(tokenizer: MappedTokenizer) -> dict[str, str]:
    bos = "<s>" if "<s>" in tokenizer.pieces_of_vocabulary() else tokenizer.id_to_piece(tokenizer.eos_id)
    return {"bos_token": bos, "eos_token": tokenizer.id_to_piece(tokenizer.eos_id),
            "unk_token": tokenizer.id_to_piece(tokenizer.unk_id),
            "pad_token": tokenizer.id_to_piece(tokenizer.pad_id)}  # fmt: skip


def _piece_ids(pieces: list[str]) -> dict[str, int]:
    return {piece: index for index, piece in enumerate(pieces)}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
