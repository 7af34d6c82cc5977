"""Every translation setting under its one name on each surface: the CLI (seq2seq-translate, and
seq2seq-serve where it has the key), Python (Translator.from_checkpoint / Translator.translate /
SearchOptions) and the server's request JSON; plus the names renamed there, kept for one release.

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


_F, _T, _S = FROM_CHECKPOINT, TRANSLATE, SEARCH_OPTIONS
_FILE = "the CLI's input names a FILE of texts (or - for stdin); Python and the server take the texts"
_GROUP = "Python takes the whole group as one SearchOptions or mapping (Translator.translate: options=)"
# fmt: off
SETTINGS: tuple[Setting, ...] = (
    # cli key, Python keyword, where, server field, seq2seq-serve has the key, description[, differs]
    _row("checkpoint", "path", _F, None, True, "a .pt checkpoint, a list (an ensemble), or an exported "
         "directory", "Python's first positional argument"),
    _row("engine", "engine", _F, None, True, "auto | torch | ctranslate2"),
    _row("input", "texts", _T, "texts", False, "the texts to translate", _FILE),
    _row("output", None, None, None, False, "where the CLI writes its lines (Python and the server return "
         "them)"),
    _row("constraints", "constraints", _T, "constraints", False, "per text, target phrases its translation "
         "must contain (CLI: a FILE, per input line its tab-separated phrases)"),
    _row("glossary", "glossary", _F, None, True, "a TSV file of source and target terms: a text's terms "
         "become its constraints"),
    _row("avoid", "avoid", _T, "avoid", False, "target phrases no translation may contain (CLI: a FILE, "
         "one per line)"),
    _row("prefixes", "prefixes", _T, None, False, "per text, the target prefix its translation starts with "
         "(CLI: a FILE, one per input line)"),
    _row("src_lang", "src_lang", _T, "src_lang", True, "a multilingual model's (M2M100, NLLB) source "
         "language code, e.g. eng_Latn (default: the one recorded at import; Python: also "
         "Translator.from_checkpoint's default; seq2seq-serve: for requests that name none)"),
    _row("tgt_lang", "tgt_lang", _T, "tgt_lang", True, "a multilingual model's target language code, e.g. "
         "spa_Latn: an M2M100/NLLB model is made to write it first in every search, a multilingual OPUS-MT "
         "model reads its >>xx<< token at the start of the source (defaults as src_lang)"),
    _row("language_columns", None, None, None, False, "[tgt_lang] | [src_lang,tgt_lang]: each input line "
         "names its languages in leading tab-separated columns (Python and the server take src_lang/tgt_lang "
         "per call or request, and batch calls of several languages together)"),
    _row("device", "device", _F, None, True, "auto | cpu | cuda (Python: cpu by default)"),
    _row("precision", "precision", _F, None, True, "fp32 | bf16"),
    _row("shortlist", "shortlist", _F, None, True, "a file written by seq2seq-shortlist for this model "
         "(torch engine)"),
    _row("quantization", "quantization", _F, None, True, "none | int8: linear layers in int8"),
    _row("compile", "compile", _F, None, True, "auto | true | false: a compiled decoder step (torch engine)"),
    _row("max_tokens", "max_tokens", _T, None, True, "token budget of one search batch"),
    _row("max_input_tokens", "max_input_tokens", _F, None, True, "longest source in tokens"),
    _row("long_lines", "long_lines", _F, None, True, "truncate | split | error: a source over "
         "max_input_tokens"),
    _row("markup", "markup", _T, "markup", True, "auto | true | false: inline tags, entities and "
         "placeholders taken out before the search and put back around the right words (auto: in texts "
         "that have any; Python: also Translator.from_checkpoint's default; seq2seq-serve: for requests "
         "that name none)"),
    _row("format", None, None, "format", False, "text | html | xliff | po: whole files translated segment by "
         "segment into the same format (CLI: the input file; server: each of \"texts\" is a file; Python: "
         "seq2seq.inference.document_formats.translate_document)"),
    _row("placeholders", "placeholders", _F, None, True, "regular expressions of text that comes out byte "
         "for byte (null: {0}, ${x}, %s, URLs, e-mail addresses, numbers; []: none)"),
    _row("encoding_errors", None, None, None, False, "strict | replace: invalid UTF-8 in the CLI's files"),
    _row("scores", None, None, None, False, "the CLI's score column; Python's Translations and the "
         "server's n-best records always carry their score"),
    _row("confidence", "confidence", _T, "confidence", False, "each translation's confidence and token "
         "probabilities"),
    _row("qe_checkpoint", "qe_checkpoint", _F, None, True, "a QE model that scores every translation "
         "(Python: the loaded seq2seq.qe.QualityEstimator)"),
    _row("rerank", "rerank", _F, None, True, "qe: order the beam's n-best by score + rerank_weight * QE "
         "score"),
    _row("rerank_weight", "rerank_weight", _F, None, True, "the QE score's weight in rerank=qe"),
    _row("confidence_format", None, None, None, False, "tsv | jsonl: how the CLI writes confidence"),
    _row("alignment", None, None, None, False, "the CLI's alignment column (argmax cross-attention)"),
    _row("attention_dir", None, None, None, False, "a directory for one cross-attention picture per "
         "sentence"),
    _row("attention_layer", None, None, None, False, "decoder layer for alignments and pictures (null: "
         "the model's alignment head, else the last layer)"),
    _row("attention_head", None, None, None, False, "attention head for alignments and pictures (null: "
         "their mean, or the model's alignment head)"),
    _row("progress_bar", None, None, None, False, "auto | true | false"),
    _row("quiet", None, None, None, False, "only warnings and errors on stderr"),
    _row("report", None, None, None, False, "a JSON file of the run's speed and settings"),
    _row("decode", "options", _F, None, True, "the search settings (the decode group)", _GROUP),
    _row("decode.beam_size", "beam_size", _T, "beam_size", True, "hypotheses kept per sentence (1: greedy)"),
    _row("decode.nbest", "nbest", _T, "nbest", True, "translations returned per text, best first"),
    _row("decode.length_penalty", "length_penalty", _T, "length_penalty", True, "GNMT alpha (null: the "
         "model's own)"),
    _row("decode.max_len_a", "max_len_a", _T, None, True, "output limit: max_len_a * source length + "
         "max_len_b"),
    _row("decode.max_len_b", "max_len_b", _T, None, True, "see max_len_a"),
    _row("decode.min_len", "min_len", _S, None, True, "shortest output in tokens"),
    _row("decode.no_repeat_ngram_size", "no_repeat_ngram_size", _S, None, True, "forbid repeated n-grams "
         "of this size"),
    _row("decode.stop_early", "stop_early", _S, None, True, "beam: a sentence stops at beam_size finished "
         "hypotheses"),
    _row("decode.sampling", "sampling", _S, None, True, "draw samples instead of searching"),
    _row("decode.temperature", "temperature", _S, None, True, "sampling: logits divided by this"),
    _row("decode.top_k", "top_k", _S, None, True, "sampling: keep the k most likely tokens (0: all)"),
    _row("decode.top_p", "top_p", _S, None, True, "sampling: keep the nucleus of this probability (1: all)"),
    _row("decode.seed", "seed", _S, None, True, "sampling: the same seed and input give the same output"),
)
# fmt: on


@dataclass(frozen=True)
class Alias:
    """An old name, accepted (or, in an answer, still sent) for one release. `surface`: "cli", "python",
    "server request" or "server answer"; `where`: the signature or command that has it."""

    surface: str
    where: str
    old: str
    new: str


DEPRECATED: tuple[Alias, ...] = (
    Alias("python", TRANSLATE, "return_scores", "each Translation's score (always filled)"),
    Alias("python", TRANSLATE, "return_confidence", "confidence"),
    Alias("python", FROM_CHECKPOINT, "quality", "qe_checkpoint"),
    Alias("cli", "seq2seq-translate", "prefix", "prefixes"),
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
