"""Every command's settings in one vocabulary: each name has one meaning, whichever command has it; each
command lists the names it takes; and the names renamed in this release, accepted for one more.

The table is data. The manual's page reference/command-settings.md is generated from it
(docs/hooks/reference_pages.py); tests/cli/test_command_settings.py fails when a command's config (or,
for seq2seq-score and seq2seq-average, its argument parser) has a key without a row here, when a command
lists a key its config lacks, or when a name is defined twice (two meanings of one name cannot be
written down). Each command's defaults stay in its YAML file (the configuration reference shows them);
what a translation setting is called in Python and in the server's JSON is seq2seq.inference.settings'.
The CLI entry points take their deprecated keys from OLD_NAMES (renamed_keys.deprecated_keys). This
module imports nothing but the standard library: the docs build reads it without PyTorch or Hydra.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Name:
    """A setting name and its one meaning in every command that has it (a group name: the config group)."""

    name: str
    meaning: str


@dataclass(frozen=True)
class Command:
    """A command and its settings. `config`: configs/<config>.yaml, whose top-level keys (config groups
    included) are `keys`; None: an argparse command whose arguments' names are `keys`, `positional` those
    given without a --flag."""

    name: str
    module: str
    config: str | None
    keys: tuple[str, ...]
    positional: tuple[str, ...] = ()


@dataclass(frozen=True)
class OldName:
    """A key renamed in this release: `command` still accepts `old` until the next one, with one warning
    line. `values`: (old value, new value) pairs where the values are spelled anew too."""

    command: str
    old: str
    new: str
    values: tuple[tuple[str, str], ...] = ()


# fmt: off
TOPICS: tuple[tuple[str, tuple[Name, ...]], ...] = (
    ("What a command reads and writes", (
        Name("checkpoint", "the model the command runs: a .pt file written by seq2seq-train or "
             "seq2seq-import (seq2seq-qe: by seq2seq-qe-train); where the command's config says so, also a "
             "list of them (an ensemble) or a directory written by seq2seq-export"),
        Name("models", "more models a server serves beside checkpoint (each a path, or a list: an ensemble); "
             "each request goes to the first model that serves its language pair"),
        Name("input", "the text file the command reads, one sentence per line (- : stdin, where the "
             "command reads a stream)"),
        Name("input_dir", "the directory the command reads (seq2seq-import: a Hugging Face model directory)"),
        Name("output", "the file the command writes (- : stdout, where the command writes a stream)"),
        Name("output_dir", "the directory the command writes its files into"),
        Name("force", "true: replace what an earlier run left at the output (a file, a directory, another "
             "run's chunks, a built corpus) instead of refusing it or reusing it"),
        Name("encoding_errors", "strict | replace: invalid UTF-8 in the files read is an error naming the "
             "line, or becomes U+FFFD"),
        Name("hypotheses", "translations, one per line, line-aligned with the sources or references"),
        Name("references", "reference translations: one or more files, line-aligned with the hypotheses"),
        Name("src_file", "the source side of a parallel text, one sentence per line (plain or .gz)"),
        Name("tgt_file", "the target side of the same parallel text, line-aligned with src_file"),
        Name("inputs", "the checkpoints to average: checkpoint files, or run directories whose numbered "
             "checkpoints are used (fairseq's flag name)"),
    )),
    ("The model and where it runs", (
        Name("engine", "auto | torch | ctranslate2: what runs the model (auto: a .pt file: torch; an "
             "exported directory: ctranslate2)"),
        Name("device", "auto | cpu | cuda | cuda:N: where the model runs (auto: a GPU when there is one)"),
        Name("precision", "auto | fp32 | bf16: what the model computes in (auto: bf16 where the device "
             "computes it natively, else fp32)"),
        Name("quantization", "none | int8: linear layers computed in int8"),
        Name("compile", "auto | true | false: a compiled decoder step (torch engine)"),
        Name("num_threads", "CPU threads for the model (null: PyTorch's default)"),
        Name("shortlist", "a vocabulary shortlist written by seq2seq-shortlist for this model"),
        Name("max_tokens", "the token budget of one batch"),
        Name("max_input_tokens", "the longest source in tokens (null: what the model's positions allow)"),
        Name("long_lines", "truncate | split | error: what becomes of a source over max_input_tokens"),
    )),
    ("Languages", (
        Name("src_lang", "the source language of the translation direction: the code a multilingual model "
             "reads (translate and serve: or auto, detected per text), a corpus file's suffix, or a record"),
        Name("tgt_lang", "the target language of the translation direction: the code a multilingual model "
             "writes, a corpus file's suffix, or a record"),
        Name("language_columns", "[tgt_lang] | [src_lang,tgt_lang]: each input line names its languages in "
             "leading tab-separated columns"),
    )),
    ("Translating", (
        Name("decode", "the search settings: the decode group (configs/decode/: beam, greedy, sample); one "
             "of them is decode.<key>=..."),
        Name("constraints", "a file: per input line, tab-separated target phrases its translation must "
             "contain"),
        Name("glossary", "a TSV file of source and target terms: a text's terms become its constraints"),
        Name("avoid", "a file of target phrases, one per line, that no translation may contain"),
        Name("prefixes", "a file: per input line, the target prefix its translation starts with"),
        Name("format", "text | html | xliff | po: the document format of what is translated"),
        Name("segment", "none | sentences: each text translated as one sentence, or split into sentences "
             "and joined with the whitespace between them"),
        Name("markup", "auto | true | false: inline tags, entities and placeholders taken out before the "
             "search and put back around the right words"),
        Name("placeholders", "regular expressions of text that comes out byte for byte (null: the "
             "defaults; []: none)"),
        Name("qe_checkpoint", "a quality-estimation model (seq2seq-qe-train's best.pt) that scores every "
             "translation"),
        Name("rerank", "qe: order the n-best by score + rerank_weight * QE score"),
        Name("rerank_weight", "the QE score's weight in rerank=qe"),
        Name("chunk_lines", "input lines per chunk: the unit saved whole and skipped by a rerun"),
        Name("filter", "which translated pairs are left out of the corpus, by the model's score of them"),
    )),
    ("What a translation run writes besides the text", (
        Name("scores", "a column with each hypothesis' score"),
        Name("confidence", "each translation's confidence (the geometric mean of its token probabilities)"),
        Name("confidence_format", "tsv | jsonl: how confidence is written"),
        Name("alignment", "a column of source-target word alignments (argmax cross-attention)"),
        Name("attention_dir", "a directory for one cross-attention picture per sentence"),
        Name("attention_layer", "the decoder layer of alignments and pictures (null: the model's alignment "
             "head, else the next-to-last layer, as markup reads)"),
        Name("attention_head", "the attention head of alignments and pictures (null: their mean, or the "
             "model's alignment head)"),
        Name("report", "a JSON file of the run's speed and settings"),
    )),
    ("Progress and logging", (
        Name("progress_bar", "auto | true | false: progress bars (auto: on a terminal)"),
        Name("log_level", "debug | info | warning | error: the least severe messages written to stderr"),
    )),
    ("Serving", (
        Name("host", "the address to listen on (0.0.0.0: every interface)"),
        Name("port", "the TCP port to listen on"),
        Name("batch_wait_ms", "a batch closes when no request has joined it for this long ..."),
        Name("max_batch_wait_ms", "... or this long after its first request"),
        Name("max_queue", "requests waiting for the model; more are refused at once"),
        Name("request_timeout_s", "the longest a request may take; also the graceful-stop limit"),
        Name("error_delay_ms", "the wait before a refusal is answered"),
        Name("max_sentences", "sentences per request"),
        Name("max_chars", "characters per sentence"),
        Name("max_beam_size", "the largest beam_size a request may ask for"),
        Name("max_body_bytes", "the largest request body read"),
        Name("max_phrases", "phrases in one sentence's constraints, and in avoid"),
        Name("max_phrase_chars", "characters per phrase"),
        Name("api_key", "the key clients must send as \"Authorization: Bearer <key>\""),
        Name("api_key_env", "the name of an environment variable holding the API key"),
        Name("cors_origins", "web origins whose pages may call the API"),
    )),
    ("Training", (
        Name("data", "the data group: the corpus, its tokenizer and its cleaning (configs/data/)"),
        Name("model", "the model group: family, size and layout (configs/model/)"),
        Name("optim", "the optimizer group (configs/optim/)"),
        Name("schedule", "the learning-rate schedule group (configs/schedule/)"),
        Name("loss", "the loss group (configs/loss/)"),
        Name("trainer", "the trainer group: budgets, validation, checkpoints, device, precision, threads "
             "(configs/trainer/)"),
        Name("run_name", "the run directory is runs/<run_name>; the same command again resumes it"),
        Name("seed", "the random seed: the same seed and settings give the same run"),
        Name("init_from", "a checkpoint whose weights start the model"),
        Name("data_dir", "a directory written by seq2seq-qe-data: the QE corpus and its tokenizers"),
    )),
    ("Making a QE corpus", (
        Name("train_source", "the sources translated for the QE training corpus"),
        Name("train_reference", "their references, the labels' yardstick"),
        Name("dev_source", "the sources translated for the QE dev corpus"),
        Name("dev_reference", "their references"),
        Name("train_passes", "a list of {checkpoint, decode}: one translation of the training sources each"),
        Name("dev_passes", "the same for the dev sources"),
        Name("max_train_sentences", "translate only the first N training sources (null: all)"),
        Name("metric", "chrf | ter: the QE label, a number in [0, 1]"),
    )),
    ("Export and shortlists", (
        Name("target", "ctranslate2 | huggingface | argos: what seq2seq-export converts the checkpoint for "
             "(argos: an Argos Translate package)"),
        Name("weight_format", "float32 | int8 | int8_float32 | bfloat16: how CTranslate2 stores the weights"),
        Name("torch_weights", "also write the weights for our engine (pytorch.pt): constrained searches run "
             "on them"),
        Name("per_source", "target candidates kept per source token"),
        Name("frequent", "the most common target tokens, candidates in every batch"),
    )),
    ("Scoring and averaging (--flags)", (
        Name("metrics", "comma-separated metrics: bleu, chrf, chrf++, ter"),
        Name("tokenize", "BLEU's tokenizer: 13a, intl, zh, char, none"),
        Name("lowercase", "case-insensitive BLEU and chrF"),
        Name("json", "print one JSON object instead of text"),
        Name("last", "average only the N newest checkpoints (default: all)"),
    )),
)
# fmt: on
NAMES: tuple[Name, ...] = tuple(name for _, names in TOPICS for name in names)
_TRANSLATION = ("decode", "checkpoint", "engine", "input")
_ENGINE = ("device", "precision", "quantization", "max_tokens", "max_input_tokens", "long_lines")
_CORPUS = ("encoding_errors", "progress_bar", "log_level")
# fmt: off
COMMANDS: tuple[Command, ...] = (
    Command("seq2seq-prepare", "seq2seq.cli.prepare", "prepare", ("data", "force", "progress_bar")),
    Command("seq2seq-train", "seq2seq.cli.train", "train", ("data", "model", "optim", "schedule", "loss",
            "decode", "trainer", "run_name", "seed", "init_from")),
    Command("seq2seq-average", "seq2seq.cli.average", None, ("inputs", "last", "output")),
    Command("seq2seq-translate", "seq2seq.cli.translate", "translate", (*_TRANSLATION, "output",
            "constraints", "glossary", "avoid", "prefixes", "src_lang", "tgt_lang", "language_columns",
            "device", "precision", "shortlist", "quantization", "compile", "max_tokens", "max_input_tokens",
            "long_lines", "segment", "format", "markup", "placeholders", "encoding_errors", "scores", "confidence",
            "qe_checkpoint", "rerank", "rerank_weight", "confidence_format", "alignment", "attention_dir",
            "attention_layer", "attention_head", "progress_bar", "log_level", "report")),
    Command("seq2seq-score", "seq2seq.cli.score", None, ("hypotheses", "references", "metrics", "tokenize",
            "lowercase", "json"), positional=("hypotheses", "references")),
    Command("seq2seq-serve", "seq2seq.cli.serve", "serve", ("decode", "checkpoint", "models", "engine", "host", "port",
            "device", "precision", "shortlist", "quantization", "compile", "num_threads", "batch_wait_ms",
            "max_batch_wait_ms", "max_tokens", "max_queue", "request_timeout_s", "error_delay_ms",
            "max_sentences", "max_chars", "max_beam_size", "max_body_bytes", "max_phrases",
            "max_phrase_chars", "max_input_tokens", "long_lines", "markup", "placeholders", "api_key",
            "api_key_env", "cors_origins", "src_lang", "tgt_lang", "glossary", "qe_checkpoint", "rerank",
            "rerank_weight", "log_level")),
    Command("seq2seq-backtranslate", "seq2seq.cli.backtranslate", "backtranslate", (*_TRANSLATION,
            "output_dir", "src_lang", "tgt_lang", "chunk_lines", "force", *_ENGINE, *_CORPUS)),
    Command("seq2seq-distill", "seq2seq.cli.distill", "distill", (*_TRANSLATION, "output_dir", "src_lang",
            "tgt_lang", "filter", "chunk_lines", "force", *_ENGINE, *_CORPUS)),
    Command("seq2seq-shortlist", "seq2seq.cli.shortlist", "shortlist", ("checkpoint", "src_file", "tgt_file",
            "output", "src_lang", "tgt_lang", "per_source", "frequent")),
    Command("seq2seq-export", "seq2seq.cli.export", "export", ("checkpoint", "output_dir", "target",
            "weight_format", "src_lang", "tgt_lang", "force", "torch_weights", "shortlist")),
    Command("seq2seq-import", "seq2seq.cli.import_model", "import", ("input_dir", "output", "src_lang",
            "tgt_lang", "force")),
    Command("seq2seq-qe-data", "seq2seq.cli.qe_data", "qe_data", ("output_dir", "train_source",
            "train_reference", "dev_source", "dev_reference", "train_passes", "dev_passes",
            "max_train_sentences", "metric", "seed", "device", "precision", "max_tokens", "progress_bar")),
    Command("seq2seq-qe-train", "seq2seq.cli.qe_train", "qe_train", ("model", "optim", "schedule", "trainer",
            "data_dir", "init_from", "run_name", "seed")),
    Command("seq2seq-qe", "seq2seq.cli.qe", "qe", ("checkpoint", "input", "hypotheses", "output", "device",
            "precision", "max_tokens", "encoding_errors", "log_level")),
)
OLD_NAMES: tuple[OldName, ...] = (
    OldName("seq2seq-translate", "prefix", "prefixes"),
    OldName("seq2seq-translate", "quiet", "log_level", (("true", "warning"), ("false", "info"))),
    OldName("seq2seq-export", "quantization", "weight_format"),
    OldName("seq2seq-export", "output", "output_dir"),
    OldName("seq2seq-export", "format", "target"),
    OldName("seq2seq-import", "input", "input_dir"),
    OldName("seq2seq-serve", "threads", "num_threads"),
    OldName("seq2seq-shortlist", "source", "src_file"),
    OldName("seq2seq-shortlist", "target", "tgt_file"),
    OldName("seq2seq-qe", "quiet", "log_level", (("true", "warning"), ("false", "info"))),
    OldName("seq2seq-backtranslate", "quiet", "log_level", (("true", "warning"), ("false", "info"))),
    OldName("seq2seq-distill", "quiet", "log_level", (("true", "warning"), ("false", "info"))),
)
# fmt: on


def meaning(name: str) -> str:
    """The one meaning of a setting name."""
    for row in NAMES:
        if row.name == name:
            return row.meaning
    raise KeyError(f"{name!r} has no row in seq2seq.cli.config.command_settings.TOPICS")


def commands_with(name: str) -> list[str]:
    """The commands that take `name`, in COMMANDS' order."""
    return [command.name for command in COMMANDS if name in command.keys]


def command(name: str) -> Command:
    """A command by its name, e.g. "seq2seq-export"."""
    for entry in COMMANDS:
        if entry.name == name:
            return entry
    raise KeyError(f"{name!r} is not in seq2seq.cli.config.command_settings.COMMANDS")


def old_names(command_name: str) -> list[OldName]:
    """The keys `command_name` still accepts under their old names."""
    return [old for old in OLD_NAMES if old.command == command_name]


__all__ = ["COMMANDS", "NAMES", "OLD_NAMES", "TOPICS", "Command", "Name", "OldName", "command",
           "commands_with", "meaning", "old_names"]  # fmt: skip
