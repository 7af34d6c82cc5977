"""Every translation setting under its one name on each surface: the CLI (seq2seq-translate, and
seq2seq-serve where it has the key), Python (Translator.from_checkpoint / Translator.translate /
SearchOptions) and the server's request JSON; plus the names renamed in Python and JSON, kept for one
release (renamed CLI keys, of every command, are seq2seq.cli.config.command_settings.OLD_NAMES).

The table is data: the manual's page reference/translation-settings.md is generated from it
(docs/hooks/reference_pages.py), and tests/inference/test_settings_table.py fails when it drifts from
the configs, the signatures or the server's FIELDS. Names on two surfaces are equal unless the row says
why not (`differs`). This module imports nothing heavy: the docs build reads it without PyTorch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)

FROM_CHECKPOINT, TRANSLATE, SEARCH_OPTIONS = (
    "Translator.from_checkpoint",
    "Translator.translate",
    "SearchOptions",
)


@dataclass(frozen=True)
class Setting:
    """One setting. `cli`: a key of configs/translate.yaml ("decode.<key>": of the decode group);
    `serve_cli`: whether seq2seq-serve's config has the same key; `python`: a keyword of `python_in`;
    `server`: a request field of POST /translate. None: that surface does not offer it."""

    cli: str | None
    python: str | None
    python_in: str | None
    server: str | None
    serve_cli: bool
    description: str
    differs: str | None = None  # why the names are not equal on every surface that has one

    @property
    def names(self) -> set[str]:
        """Its names on the surfaces that have it (a decode key without its "decode." group prefix)."""
        cli = None if self.cli is None else self.cli.removeprefix("decode.")
        return {name for name in (cli, self.python, self.server) if name is not None}


def _row(
    cli: str | None, python: str | None, python_in: str | None, server: str | None, serve_cli: bool,
    description: str, differs: str | None = None,
) -> Setting:  # fmt: skip
    return Setting(cli, python, python_in, server, serve_cli, description, differs)


def _loading(name: str, description: str) -> Setting:
    """How the model is loaded: one name in both commands' configs and Translator.from_checkpoint, and
    fixed for the server's lifetime (no request field)."""
    return Setting(name, name, FROM_CHECKPOINT, None, True, description)


def _search(name: str, python_in: str, description: str, *, per_request: bool = False) -> Setting:
    """A key of the decode group: `decode.<name>` in both commands' configs, `name` in Python (a keyword
    of `python_in`) and, when `per_request`, in the server's request JSON."""
    return Setting(f"decode.{name}", name, python_in, name if per_request else None, True, description)


_F, _T, _S = FROM_CHECKPOINT, TRANSLATE, SEARCH_OPTIONS
_FILE = "the CLI's input names a FILE of texts (or - for stdin); Python and the server take the texts"
_GROUP = "Python takes the whole group as one SearchOptions or mapping (Translator.translate: options=)"
# fmt: off
SETTINGS: tuple[Setting, ...] = (
    # _row: cli key, Python keyword, where, server field, seq2seq-serve has the key, description[, differs]
    # _loading: how the model is loaded; _search: a key of the decode group
    _row("checkpoint", "path", _F, None, True, "a .pt checkpoint, a list (an ensemble), or an exported "
         "directory", "Python's first positional argument"),
    _loading("engine", "auto | torch | ctranslate2"),
    _row("input", "texts", _T, "texts", False, "the texts to translate", _FILE),
    _row("output", None, None, None, False, "where the CLI writes its lines (Python and the server return "
         "them)"),
    _row("constraints", "constraints", _T, "constraints", False, "per text, target phrases its translation "
         "must contain (CLI: a FILE, per input line its tab-separated phrases)"),
    _loading("glossary", "a TSV file of source and target terms: a text's terms become its constraints"),
    _row("avoid", "avoid", _T, "avoid", False, "target phrases no translation may contain (CLI: a FILE, "
         "one per line)"),
    _row("prefixes", "prefixes", _T, None, False, "per text, the target prefix its translation starts with "
         "(CLI: a FILE, one per input line)"),
    _row("src_lang", "src_lang", _T, "src_lang", True, "a multilingual model's (M2M100, NLLB) source "
         "language code, e.g. eng_Latn, or auto (detected per text: seq2seq.inference.language_detection); "
         "Python and the server also take a list of one code per text "
         "(default: the one recorded at import; Python: also Translator.from_checkpoint's default; "
         "seq2seq-serve: for requests that name none)"),
    _row("tgt_lang", "tgt_lang", _T, "tgt_lang", True, "a multilingual model's target language code, e.g. "
         "spa_Latn: an M2M100/NLLB model is made to write it first in every search, a multilingual OPUS-MT "
         "model reads its >>xx<< token at the start of the source (defaults as src_lang)"),
    _row("language_columns", None, None, None, False, "[tgt_lang] | [src_lang,tgt_lang]: each input line "
         "names its languages in leading tab-separated columns (Python and the server take src_lang/tgt_lang "
         "lists of one code per text); texts of all languages share the batches"),
    _loading("device", "auto | cpu | cuda | cuda:N (auto: a GPU when CUDA has one, else the CPU)"),
    _loading("precision", "auto | fp32 | bf16 (auto: bf16 where the device computes it natively, else "
             "fp32)"),
    _loading("shortlist", "a file written by seq2seq-shortlist for this model (torch engine)"),
    _loading("quantization", "none | int8: linear layers in int8"),
    _loading("compile", "auto | true | false: a compiled decoder step (torch engine)"),
    _row("max_tokens", "max_tokens", _T, None, True, "token budget of one search batch"),
    _loading("max_input_tokens", "longest source in tokens"),
    _loading("long_lines", "truncate | split | error: a source over max_input_tokens"),
    _row("markup", "markup", _T, "markup", True, "auto | true | false: inline tags, entities and "
         "placeholders taken out before the search and put back around the right words (auto: in texts "
         "that have any; Python: also Translator.from_checkpoint's default; seq2seq-serve: for requests "
         "that name none)"),
    _row("segment", "segment", _T, "segment", False, "none | sentences: each text split into sentences "
         "(sentencex), searched together and joined with the whitespace between them (default: none; "
         "the LibreTranslate API: sentences)"),
    _row("format", None, None, "format", False, "text | html | xliff | po: whole files translated segment by "
         "segment into the same format (CLI: the input file; server: each of \"texts\" is a file; Python: "
         "seq2seq.inference.document_formats.translate_document)"),
    _loading("placeholders", "regular expressions of text that comes out byte for byte (null: {0}, ${x}, "
             "%s, URLs, e-mail addresses, numbers; []: none)"),
    _row("encoding_errors", None, None, None, False, "strict | replace: invalid UTF-8 in the CLI's files"),
    _row("scores", None, None, None, False, "the CLI's score column; Python's Translations and the "
         "server's n-best records always carry their score"),
    _row("confidence", "confidence", _T, "confidence", False, "each translation's confidence and token "
         "probabilities"),
    _loading("qe_checkpoint", "a QE model (seq2seq-qe-train's best.pt) that scores every translation "
             "(Python: the path, or a loaded QualityEstimator)"),
    _loading("rerank", "qe: order the beam's n-best by score + rerank_weight * QE score"),
    _loading("rerank_weight", "the QE score's weight in rerank=qe"),
    _row("confidence_format", None, None, None, False, "tsv | jsonl: how the CLI writes confidence"),
    _row("alignment", None, None, None, False, "the CLI's alignment column (argmax cross-attention)"),
    _row("attention_dir", None, None, None, False, "a directory for one cross-attention picture per "
         "sentence"),
    _row("attention_layer", None, None, None, False, "decoder layer for alignments and pictures (null: "
         "the model's alignment head, else the next-to-last layer, as markup reads)"),
    _row("attention_head", None, None, None, False, "attention head for alignments and pictures (null: "
         "their mean, or the model's alignment head)"),
    _row("progress_bar", None, None, None, False, "auto | true | false"),
    _row("log_level", None, None, None, True, "debug | info | warning | error: the least severe messages on "
         "stderr"),
    _row("report", None, None, None, False, "a JSON file of the run's speed and settings"),
    _row("decode", "options", _F, None, True, "the search settings (the decode group)", _GROUP),
    _search("beam_size", _T, "hypotheses kept per sentence (1: greedy)", per_request=True),
    _search("nbest", _T, "translations returned per text, best first", per_request=True),
    _search("length_penalty", _T, "GNMT alpha (null: the model's own)", per_request=True),
    _search("max_len_a", _T, "output limit: max_len_a * source length + max_len_b"),
    _search("max_len_b", _T, "see max_len_a"),
    _search("min_len", _S, "shortest output in tokens"),
    _search("no_repeat_ngram_size", _S, "forbid repeated n-grams of this size"),
    _search("stop_early", _S, "beam: a sentence stops at beam_size finished hypotheses"),
    _search("sampling", _S, "draw samples instead of searching"),
    _search("temperature", _S, "sampling: logits divided by this"),
    _search("top_k", _S, "sampling: keep the k most likely tokens (0: all)"),
    _search("top_p", _S, "sampling: keep the nucleus of this probability (1: all)"),
    _search("seed", _S, "sampling: the same seed and input give the same output"),
)
# fmt: on


@dataclass(frozen=True)
class Alias:
    """An old name, accepted (or, in an answer, still sent) for one release. `surface`: "python",
    "server request" or "server answer"; `where`: the signature or endpoint that has it. (An old CLI key
    is in seq2seq.cli.config.command_settings.OLD_NAMES, with every command's.)"""

    surface: str
    where: str
    old: str
    new: str


DEPRECATED: tuple[Alias, ...] = (
    Alias("python", TRANSLATE, "return_scores", "each Translation's score (always filled)"),
    Alias("python", TRANSLATE, "return_confidence", "confidence"),
    Alias("python", FROM_CHECKPOINT, "quality", "qe_checkpoint"),
    Alias("server request", "POST /translate", "text", "texts"),
    Alias("server answer", "POST /translate", "constraints", "constraints_total"),
    Alias("server answer", "POST /translate", "scores", 'each n-best record\'s "score"'),
)


__all__ = [
    "DEPRECATED",
    "FROM_CHECKPOINT",
    "SEARCH_OPTIONS",
    "SETTINGS",
    "TRANSLATE",
    "Alias",
    "Setting",
]
