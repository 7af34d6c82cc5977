"""The Python Translator gives seq2seq-translate's output (it is the same code); the export CLI round trip."""

from __future__ import annotations

from pathlib import Path

import pytest
from commands import MIXED_LINES, run_module, translate

from seq2seq import Translator
from seq2seq.errors import UserError
from seq2seq.inference.confidence import Translation


@pytest.mark.slow
@pytest.mark.parametrize("long_lines", ["truncate", "split"])
def test_translator_equals_the_cli_on_hostile_input(finished_run: Path, tmp_path: Path, long_lines: str):
    result, output = translate(
        finished_run, tmp_path, MIXED_LINES, None, "decode=beam", f"long_lines={long_lines}"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    translator = Translator.from_checkpoint(
        finished_run / "last.pt", max_input_tokens=64, long_lines=long_lines
    )
    assert [str(t) for t in translator.translate(MIXED_LINES)] == output.read_text(encoding="utf-8").split(
        "\n"
    )[:-1]


@pytest.mark.slow
def test_nbest_scores_equal_the_cli(finished_run: Path, tmp_path: Path):
    lines = [line for line in MIXED_LINES if line.strip()][:3]
    result, output = translate(finished_run, tmp_path, lines, None, "decode.beam_size=4", "decode.nbest=3")
    assert result.returncode == 0, result.stderr[-2000:]
    expected: list[list[tuple[str, float]]] = [[] for _ in lines]
    for row in output.read_text(encoding="utf-8").splitlines():
        index, text, score = row.split(" ||| ")
        expected[int(index)].append((text, float(score)))
    translator = Translator.from_checkpoint(finished_run / "last.pt", max_input_tokens=64)
    got = [best.nbest for best in translator.translate(lines, beam_size=4, nbest=3)]
    assert [[t.text for t in nbest] for nbest in got] == [[text for text, _ in nbest] for nbest in expected]
    for mine, cli in zip(got, expected):
        assert [round(t.score, 4) for t in mine] == [score for _, score in cli]


@pytest.mark.slow
def test_translator_arguments_are_checked(finished_run: Path):
    translator = Translator.from_checkpoint(finished_run / "last.pt")
    assert translator.translate([]) == [] and translator.translate([""]) == [Translation("", 0.0)]
    with pytest.raises(UserError, match="beam_size='5' must be int"):
        translator.translate(["the dog"], beam_size="5")
    with pytest.raises(UserError, match="engine='onnx' is not supported"):
        Translator.from_checkpoint(finished_run / "last.pt", engine="onnx")
    with pytest.raises(UserError, match="not a CTranslate2 model directory"):
        Translator.from_checkpoint(finished_run, engine="ctranslate2")


@pytest.mark.slow
def test_export_cli_then_translate_cli_with_the_exported_model(finished_run: Path, tmp_path: Path):
    pytest.importorskip("ctranslate2", reason="needs the export extra: pip install '.[export]'")
    exported = tmp_path / "exported"
    result = run_module(
        "seq2seq.cli.export", f"checkpoint={finished_run / 'last.pt'}", f"output_dir={exported}", cwd=tmp_path
    )
    assert result.returncode == 0 and (exported / "model.bin").is_file(), result.stderr[-2000:]
    lines = ["the man sees the dog", "", "a woman finds the house"]
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    outputs = {}
    for name, checkpoint in (("torch", finished_run / "last.pt"), ("ctranslate2", exported)):
        target = tmp_path / f"{name}.txt"
        result = run_module(
            "seq2seq.cli.translate", f"checkpoint={checkpoint}", f"input={source}", f"output={target}",
            "decode=greedy", cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        outputs[name] = target.read_text(encoding="utf-8")
    assert outputs["torch"] == outputs["ctranslate2"] and outputs["torch"].split("\n")[1] == ""
    again = run_module(
        "seq2seq.cli.export", f"checkpoint={finished_run / 'last.pt'}", f"output_dir={exported}", cwd=tmp_path
    )
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "force=true" in again.stderr


@pytest.mark.slow
def test_prefixes_start_every_output_and_are_scored_like_teacher_forcing(finished_run: Path, tmp_path: Path):
    import torch

    translator = Translator.from_checkpoint(finished_run / "last.pt")
    texts = ["the man sees the dog", "a woman finds the house", "the king loves bread"]
    prefixes = ["el perro", "", "un rey ve"]
    got = translator.translate(texts, beam_size=1, prefixes=prefixes)
    for (text, score), prefix, source in zip(((t.text, t.score) for t in got), prefixes, texts):
        assert text.startswith(prefix)
        tokens = translator.tgt_tokenizer.encode(text)
        ids = translator.tgt_tokenizer
        src = torch.tensor([translator.src_tokenizer.encode(source) + [ids.eos_id]])
        tgt_in = torch.tensor([[ids.bos_id, *tokens]])
        with torch.no_grad():
            logprobs = torch.log_softmax(translator.model(src, tgt_in).float(), dim=-1)[0]  # (T, V)
        forced = logprobs[torch.arange(len(tokens) + 1), torch.tensor([*tokens, ids.eos_id])]
        assert score == pytest.approx(float(forced.sum()), abs=1e-4)
    source, prefix_file = tmp_path / "in.txt", tmp_path / "prefix.txt"
    source.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    prefix_file.write_text("".join(p + "\n" for p in prefixes), encoding="utf-8")
    output = tmp_path / "out.txt"
    checkpoint = f"checkpoint={finished_run / 'last.pt'}"
    result = run_module("seq2seq.cli.translate", checkpoint, f"input={source}", f"prefixes={prefix_file}",
                        f"output={output}", "decode=greedy", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert output.read_text(encoding="utf-8").split("\n")[:-1] == [t.text for t in got]
    prefix_file.write_text("el\n", encoding="utf-8")
    result = run_module("seq2seq.cli.translate", checkpoint, f"input={source}", f"prefixes={prefix_file}",
                        cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2 and "has 1 lines but the input has 3" in result.stderr


@pytest.mark.slow
def test_an_ensemble_from_the_command_line(finished_run: Path, tmp_path: Path):
    from seq2seq.checkpoint import load_checkpoint, save_checkpoint
    from seq2seq.data.tokenizer import Tokenizer

    lines = ["the man sees the dog", "", "a woman finds the house"]
    _, single = translate(finished_run, tmp_path, lines, None, "decode=greedy")
    twice = tmp_path / "twice"
    twice.mkdir()
    paths = f"[{finished_run / 'last.pt'},{finished_run / 'last.pt'}]"
    result = run_module("seq2seq.cli.translate", f"checkpoint={paths}", f"input={tmp_path / 'input.txt'}",
                        f"output={twice / 'out.txt'}", "decode=greedy", "max_input_tokens=64",
                        cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert (twice / "out.txt").read_text() == single.read_text()  # two copies of a model = the model
    payload = load_checkpoint(finished_run / "last.pt")
    other = Tokenizer.train(["el perro ve al gato", "la casa"] * 50, vocab_size=30, model_type="bpe")
    payload["tokenizer"] = {"src": other.to_bytes(), "tgt": None}
    save_checkpoint(tmp_path / "other.pt", {k: v for k, v in payload.items() if k != "format_version"})
    mixed = f"[{finished_run / 'last.pt'},{tmp_path / 'other.pt'}]"
    result = run_module("seq2seq.cli.translate", f"checkpoint={mixed}", "input=-", cwd=tmp_path, stdin=b"x\n")
    assert result.returncode == 2 and b"use different tokenizers" in result.stderr
    assert b"Traceback" not in result.stderr


@pytest.mark.slow
def test_an_xformers_checkpoint_translates_with_sdpa_where_xformers_cannot_run(
    finished_run: Path, tmp_path: Path, monkeypatch, caplog
):
    import logging

    from seq2seq.checkpoint import load_checkpoint, save_checkpoint
    from seq2seq.inference import loading
    from seq2seq.model import argument_checks

    payload = load_checkpoint(finished_run / "last.pt")
    payload["model_config"] = {**payload["model_config"], "attention_backend": "xformers"}
    save_checkpoint(tmp_path / "xformers.pt", {k: v for k, v in payload.items() if k != "format_version"})
    for module in (loading, argument_checks):  # as on a machine without the package
        monkeypatch.setattr(module, "xformers_installed", lambda: False)
    lines = ["the man sees the dog", "a woman finds the house"]
    with caplog.at_level(logging.INFO):
        fallback = Translator.from_checkpoint(tmp_path / "xformers.pt").translate(lines)
    assert (
        "trained with attention_backend=xformers, which cannot run here (it is not installed); using sdpa"
        in caplog.text
    )
    assert fallback == Translator.from_checkpoint(finished_run / "last.pt").translate(lines)
