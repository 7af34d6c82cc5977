"""seq2seq-translate with decoder-only checkpoints (causal and prefix LM): what it writes equals the
Translator's answer for the same inputs and settings (greedy, beam, n-best, no-repeat n-grams, seeded
sampling, forced prefixes, an ensemble of two); one output line per input line, however long, as the
default input limit leaves the model room to answer (its source and output share the positions); and
what it cannot do is refused in one line before any search (an ensemble of two families, alignments and
attention pictures).

Most runs call the command's function in this process on the config Hydra composes from the same
overrides (a subprocess costs a Python start-up each); the beam run and the mixed ensemble also run as a
user runs them. Outputs carry scores where they can: a random model repeats a few words, but its scores
differ for every input, so equal lines mean equal searches.
"""

from __future__ import annotations

import itertools
from functools import partial
from pathlib import Path

import pytest
from commands import MIXED_LINES, error_line, run_module
from in_process import translate_lines
from tiny_models import (
    SHARP_DECODER_ONLY_PAIR,
    TINY,
    sentences,
    tiny_checkpoints,
    tiny_decoder_only,
    tiny_model,
)

from seq2seq import Translator
from seq2seq.errors import UserError
from seq2seq.inference.confidence import Translation

LINES = [*sentences(5, seed=1), ""]  # the empty line stays an empty output line
OPTIONS = {"max_len_a": 0.0, "max_len_b": 12}  # the Translator's side of SHORT
SHORT = ["decode.max_len_a=0", "decode.max_len_b=12"]
Checkpoint = Path | list[Path]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Random tiny models of one tokenizer: sharp ones (clear-cut choices), a flat one to sample from."""
    flat = partial(tiny_decoder_only, seed=2, max_positions=128)
    encoder_decoder = partial(tiny_model, sharpness=4.0, max_positions=128)
    models = {**SHARP_DECODER_ONLY_PAIR, "flat": flat, "encoder_decoder": encoder_decoder}
    return tiny_checkpoints(tmp_path_factory.mktemp("checkpoints"), models, step=3)


def checkpoint_setting(checkpoint: Checkpoint) -> str:
    paths = checkpoint if isinstance(checkpoint, list) else [checkpoint]
    return f"checkpoint=[{','.join(map(str, paths))}]" if len(paths) > 1 else f"checkpoint={paths[0]}"


def run_translate(
    checkpoint: Checkpoint, tmp_path: Path, *overrides: str, lines: list[str] = LINES
) -> tuple[int, str, list[str] | None]:
    """seq2seq-translate's function on `lines` with `overrides` -> (exit code, stderr, output lines or
    None when no output file was written)."""
    return translate_lines(tmp_path, lines, checkpoint_setting(checkpoint), *SHORT, *overrides)


def scored_lines(translations: list[Translation], lines: list[str] = LINES) -> list[str]:
    """What the command writes with scores=true: "text<TAB>score", or "" for an empty input line."""
    return [f"{t.text}\t{t.score:.4f}" if line.strip() else "" for line, t in zip(lines, translations)]


@pytest.mark.parametrize("decode", ["greedy", "beam"])
@pytest.mark.parametrize("family", ["causal", "prefix_lm"])
def test_greedy_and_beam_equal_the_translator(checkpoints, tmp_path: Path, family: str, decode: str) -> None:
    code, stderr, output = run_translate(checkpoints[family], tmp_path, f"decode={decode}", "scores=true")
    assert code == 0, stderr[-2000:]
    translator = Translator.from_checkpoint(checkpoints[family], options=OPTIONS)
    beam_size = 1 if decode == "greedy" else None  # None: the Translator's beam 5, as decode=beam
    assert output == scored_lines(translator.translate(LINES, beam_size=beam_size))
    assert len(set(output)) == len(output)  # every input its own score: the comparison tells them apart


SPLIT_LINES = ["in the beginning", " ".join(["god created heaven and earth"] * 30), ""]


@pytest.mark.parametrize(("long_lines", "lines"), [("truncate", MIXED_LINES), ("split", SPLIT_LINES)])
def test_one_output_line_per_input_line_with_the_default_input_limit(
    checkpoints, tmp_path: Path, caplog: pytest.LogCaptureFixture, long_lines: str, lines: list[str]
) -> None:
    """A decoder-only model's source and output share its positions: the longest line, cut (or split)
    at the default limit, still leaves the model room to answer."""
    code, stderr, output = run_translate(
        checkpoints["causal"], tmp_path, "decode=greedy", f"long_lines={long_lines}", lines=lines
    )
    assert code == 0, stderr[-2000:]
    assert len(output) == len(lines) and all(
        out == "" for out, line in zip(output, lines) if not line.strip()
    )
    assert output[lines.index(max(lines, key=len))] != ""
    assert ("truncated" in caplog.text) == (long_lines == "truncate")


def test_the_input_limit_leaves_the_model_room_to_answer(checkpoints) -> None:
    # 128 positions: a source of 63 tokens and eos, the tag, and 63 output tokens; at most 125 + eos + tag + 1
    causal = checkpoints["causal"]
    assert Translator.from_checkpoint(causal).max_input_tokens == 63
    longest = Translator.from_checkpoint(causal, max_input_tokens=125, options={"beam_size": 1, "min_len": 1})
    source = [longest.src_tokenizer.piece_to_id("▁the")] * 125 + [longest.src_tokenizer.eos_id]
    assert len(longest.search([source])[0][0].tokens) == 1  # the room left for output: one token
    with pytest.raises(
        UserError, match=r"^max_input_tokens=126 must be an integer from 1 to 125 .* null for 63$"
    ):
        Translator.from_checkpoint(causal, max_input_tokens=126)
    assert Translator.from_checkpoint(checkpoints["encoder_decoder"]).max_input_tokens == 127  # as before


@pytest.mark.slow
def test_the_command_as_a_user_runs_it(checkpoints, tmp_path: Path) -> None:
    source, output = tmp_path / "input.txt", tmp_path / "output.txt"
    source.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    result = run_module("seq2seq.cli.translate", checkpoint_setting(checkpoints["causal"]), f"input={source}",
                        f"output={output}", *SHORT, "scores=true", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    translator = Translator.from_checkpoint(checkpoints["causal"], options=OPTIONS)
    expected = scored_lines(translator.translate(LINES))
    assert output.read_text(encoding="utf-8").split("\n")[:-1] == expected


def test_nbest_lists_equal_the_translator(checkpoints, tmp_path: Path) -> None:
    code, stderr, output = run_translate(checkpoints["causal"], tmp_path, "decode.nbest=3")
    assert code == 0, stderr[-2000:]
    translator = Translator.from_checkpoint(checkpoints["causal"], options=OPTIONS)
    nbest = [t.nbest for t in translator.translate(LINES, nbest=3)]
    expected = [
        f"{index} ||| {t.text} ||| {t.score:.4f}" for index, ranked in enumerate(nbest) for t in ranked
    ]
    assert output == expected
    assert [line.split(" ||| ")[0] for line in output] == [str(i) for i in range(5) for _ in range(3)] + ["5"]
    for index in range(5):
        scores = [t.score for t in nbest[index]]
        assert scores == sorted(scores, reverse=True) and len(set(scores)) == 3


def test_no_repeat_ngram_equals_the_translator_and_repeats_no_bigram(checkpoints, tmp_path: Path) -> None:
    code, stderr, output = run_translate(checkpoints["causal"], tmp_path, "decode.no_repeat_ngram_size=2")
    assert code == 0, stderr[-2000:]
    translator = Translator.from_checkpoint(checkpoints["causal"], options=OPTIONS)
    sources = translator.encode(LINES).sources
    results = translator.search(sources, translator.options.replace(no_repeat_ngram_size=2))
    assert output == [translator.detokenize(nbest[0].tokens) if nbest else "" for nbest in results]

    def repeats_a_bigram(tokens: list[int]) -> bool:
        bigrams = list(itertools.pairwise(tokens))
        return len(set(bigrams)) < len(bigrams)

    assert not any(repeats_a_bigram(list(nbest[0].tokens)) for nbest in results if nbest)
    plain = translator.search(sources)  # the random model does repeat itself: the option had work to do
    assert any(repeats_a_bigram(list(nbest[0].tokens)) for nbest in plain if nbest)


def test_seeded_sampling_equals_the_translator(checkpoints, tmp_path: Path) -> None:
    sample = ["decode=sample", "decode.temperature=2.0", "decode.seed=7"]
    code, stderr, output = run_translate(checkpoints["flat"], tmp_path, *sample, "scores=true")
    assert code == 0, stderr[-2000:]
    options = {**OPTIONS, "beam_size": 1, "sampling": True, "temperature": 2.0, "seed": 7}
    translator = Translator.from_checkpoint(checkpoints["flat"], options=options)
    assert output == scored_lines(translator.translate(LINES))
    other_seed = translator.translate(LINES, options=translator.options.replace(seed=8))
    assert [line.split("\t")[0] for line in output] != [
        t.text for t in other_seed
    ]  # the seed decides the samples


def test_forced_prefixes_start_the_outputs(checkpoints, tmp_path: Path) -> None:
    prefixes = ["in the", "", "god created", "", "water", ""]
    prefix_file = tmp_path / "prefixes.txt"
    prefix_file.write_text("".join(prefix + "\n" for prefix in prefixes), encoding="utf-8")
    code, stderr, output = run_translate(checkpoints["causal"], tmp_path, f"prefixes={prefix_file}")
    assert code == 0, stderr[-2000:]
    translator = Translator.from_checkpoint(checkpoints["causal"], options=OPTIONS)
    assert output == [t.text for t in translator.translate(LINES, prefixes=prefixes)]
    assert all(line.startswith(prefix) for line, prefix in zip(output, prefixes))
    unforced = [t.text for t in translator.translate(LINES)]
    assert all(output[i] != unforced[i] for i in (0, 2, 4)) and output[1] == unforced[1]


@pytest.mark.slow
def test_the_deprecated_prefix_key_still_works_with_one_warning(checkpoints, tmp_path: Path) -> None:
    prefixes = ["in the", "", "god created", "", "water", ""]
    source, output, prefix_file = tmp_path / "input.txt", tmp_path / "output.txt", tmp_path / "prefixes.txt"
    source.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    prefix_file.write_text("".join(prefix + "\n" for prefix in prefixes), encoding="utf-8")
    settings = [checkpoint_setting(checkpoints["causal"]), f"input={source}", f"output={output}", *SHORT]
    settings += [f"prefix={prefix_file}", "log_level=warning"]
    result = run_module("seq2seq.cli.translate", *settings, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    translator = Translator.from_checkpoint(checkpoints["causal"], options=OPTIONS)
    assert output.read_text(encoding="utf-8").split("\n")[:-1] == [
        t.text for t in translator.translate(LINES, prefixes=prefixes)
    ]
    warnings = [line for line in result.stderr.splitlines() if "deprecated" in line]
    assert warnings == ["prefix is deprecated and will stop working in the next release; use prefixes"]


# heavy: the slowest of the quick loop (the ensemble's beam search, then each member's beam search alone)
@pytest.mark.slow
def test_an_ensemble_of_a_causal_and_a_prefix_lm_model(checkpoints, tmp_path: Path) -> None:
    pair = [checkpoints["causal"], checkpoints["prefix_lm"]]
    code, stderr, output = run_translate(pair, tmp_path, "scores=true")
    assert code == 0, stderr[-2000:]
    ensemble = Translator.from_checkpoint(pair, options=OPTIONS)
    assert output == scored_lines(ensemble.translate(LINES))
    for member in pair:  # both models count: the ensemble scores like neither alone
        alone = Translator.from_checkpoint(member, options=OPTIONS).translate(LINES)
        assert all(a != b for a, b in zip(output[:5], scored_lines(alone)))


@pytest.mark.slow
def test_an_ensemble_of_two_families_is_one_error_line(checkpoints, tmp_path: Path) -> None:
    mixed = [checkpoints["causal"], checkpoints["encoder_decoder"]]
    source, output = tmp_path / "input.txt", tmp_path / "output.txt"
    source.write_text("in the beginning\n", encoding="utf-8")
    settings = [checkpoint_setting(mixed), f"input={source}", f"output={output}"]
    result = run_module("seq2seq.cli.translate", *settings, cwd=tmp_path)
    line = error_line(result)
    assert "one family" in line and "decoder_only and encoder_decoder" in line, line
    assert not output.exists()


@pytest.mark.parametrize("setting", ["alignment=true", "attention_dir={tmp}/pictures"])
def test_alignment_and_pictures_are_refused_before_the_search(
    checkpoints, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    def no_search(*_args, **_kwargs):
        raise AssertionError("searched before refusing")

    monkeypatch.setattr(Translator, "search", no_search)
    code, stderr, output = run_translate(checkpoints["causal"], tmp_path, setting.format(tmp=tmp_path))
    assert code == 2 and output is None and not (tmp_path / "pictures").exists()
    assert stderr.splitlines() == [
        "error: a decoder-only model has no cross-attention to align with; "
        "drop alignment= and attention_dir= for this checkpoint"
    ]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (f"attention_layer={TINY['decoder_layers']}", "is not a decoder layer of this model"),
        (f"attention_head=-{TINY['n_heads'] + 1}", "is not a head of this model"),
    ],
)
def test_an_attention_layer_or_head_the_model_lacks_is_refused_before_the_search(
    checkpoints, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str, message: str
) -> None:
    """The probe that refuses a decoder-only model checks the settings of an encoder-decoder one too."""
    (tmp_path / "accepted").mkdir()
    code, stderr, output = run_translate(
        checkpoints["encoder_decoder"], tmp_path / "accepted", "alignment=true", "decode=greedy"
    )
    assert code == 0 and all(len(line.split("\t")) == 2 for line in output[:5]), stderr[-2000:]
    monkeypatch.setattr(Translator, "search", lambda *_a, **_k: pytest.fail("searched before refusing"))
    code, stderr, output = run_translate(checkpoints["encoder_decoder"], tmp_path, "alignment=true", setting)
    assert code == 2 and output is None, stderr[-2000:]
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {setting} {message} ("), stderr
