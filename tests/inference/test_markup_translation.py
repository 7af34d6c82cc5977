"""The Translator with markup (seq2seq.inference.markup_text) on a tiny fixed model: a text's tags and
placeholders come back where the model's own cross-attention puts them, computed here independently
(PyTorch ops on the model, sentencepiece's own character offsets); plain texts translate as before;
every element comes back once, well-formed stays well-formed; an ensemble (no attention) still keeps
every element."""

from __future__ import annotations

import xml.dom.minidom

import pytest
import torch
from in_process import run_translate, translate_lines
from tiny_models import sentences
from tiny_translator import tiny_translator_fixtures

from seq2seq import Translator
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.markup import markup_pattern, parse_markup
from seq2seq.inference.tag_projection import restore_markup

OPTIONS = SearchOptions(beam_size=1, max_len_a=0.0, max_len_b=10)
MARKED = [
    "in the <b>beginning</b> god created heaven",
    "<p>the night <i>was</i> good</p>",
    "water {0} and land %s",
    "light &amp; <a href='x'>day</a><br/>",
]


checkpoint, translator = tiny_translator_fixtures(OPTIONS, step=1, sharpness=4.0)


def char_spans(text: str, proto) -> list[tuple[int, int]]:
    """sentencepiece's byte offsets of each piece as character offsets."""
    starts = [0]
    for character in text:
        starts.append(starts[-1] + len(character.encode("utf-8")))
    char_at = {byte: index for index, byte in enumerate(starts)}
    return [(char_at[p.begin], char_at[p.end]) for p in proto.pieces]


def reference(translator: Translator, line: str) -> str:
    """The plain text's translation with the markup put back by argmax cross-attention (the next-to-last
    decoder layer's), all computed here."""
    marked = parse_markup(line, markup_pattern())
    processor = translator.src_tokenizer._sp
    source_proto = processor.encode(marked.plain, return_type="proto")
    source = [p.id for p in source_proto.pieces] + [translator.src_tokenizer.eos_id]
    output = translator.translate([marked.plain], markup="false")[0].text
    tokens = list(translator.search([source])[0][0].tokens)  # the search's own pieces
    target_proto = processor.decode(tokens, return_type="proto")
    assert target_proto.text == output
    model = translator.model
    with torch.no_grad():
        src = torch.tensor([source])  # (1, S)
        tgt_in = torch.tensor([[translator.tgt_tokenizer.bos_id, *tokens]])  # (1, T)
        layer = -2 if model.config["decoder_layers"] >= 2 else -1  # the next-to-last layer aligns best
        weights = model.cross_attention(src, tgt_in, layer=layer)[0].mean(0)  # (T, S)
    links = [(int(s), t) for t, s in enumerate(weights[: len(tokens)].argmax(-1)) if s < len(source) - 1]
    return restore_markup(
        marked, char_spans(marked.plain, source_proto), output, char_spans(output, target_proto), links
    )


def test_markup_goes_where_the_models_attention_puts_it(translator):
    got = [t.text for t in translator.translate(MARKED)]
    assert got == [reference(translator, line) for line in MARKED]
    for line, text in zip(MARKED, got):
        assert all(element.text in text for element in parse_markup(line, markup_pattern()).elements)


def test_plain_texts_translate_as_without_markup_handling(translator):
    plain = sentences(6, seed=3)
    assert translator.translate(plain) == translator.translate(plain, markup="false")


def test_markup_false_reads_tags_as_text(translator):
    marked = translator.translate(MARKED[:1], markup="false")[0].text
    assert marked == translator.translate([MARKED[0]], markup="false")[0].text
    assert "<b>" not in marked


HOSTILE = [
    "<b>never closed <i>in the",
    "<![CDATA[ <b> ]]> water <!-- <i> --> land",
    " ".join(f"<u{i}>god</u{i}>" for i in range(500)),  # 1,000 tags on one line
    "<b>night <i>and</b> day</i> {x} ${y} 42 https://a.bc/d e@f.gh",
]


@pytest.mark.parametrize("line", HOSTILE)
def test_every_element_comes_back_once(translator, line):
    (out,) = translator.translate([line])
    pattern = markup_pattern()
    expected = sorted(m.group() for m in pattern.finditer(line) if m.lastgroup != "entity")
    assert sorted(m.group() for m in pattern.finditer(out.text) if m.lastgroup != "entity") == expected
    if line.startswith("<u0>"):
        xml.dom.minidom.parseString(f"<root>{out.text}</root>")  # well-formed in, well-formed out


def test_an_ensemble_puts_markup_back_by_position(checkpoint, translator, caplog):
    ensemble = Translator.from_checkpoint([checkpoint, checkpoint], options=OPTIONS)
    with caplog.at_level("INFO", logger="seq2seq.inference.markup_text"):
        (out,) = ensemble.translate(["in the <b>beginning</b> god"])
    assert out.text.count("<b>") == 1 and out.text.count("</b>") == 1
    assert "by position" in caplog.text


def test_a_bad_markup_value_is_one_line(checkpoint, translator):
    with pytest.raises(UserError, match=r"^markup='html' is not supported; choose auto, true, false$"):
        translator.translate(["x"], markup="html")
    with pytest.raises(UserError, match=r"^placeholder pattern '\[' is no regular expression"):
        Translator.from_checkpoint(checkpoint, placeholders=["["])


def test_the_cli_and_the_server_put_markup_back_as_the_translator_does(checkpoint, translator, tmp_path):
    from fastapi.testclient import TestClient

    from seq2seq.serve.app import create_app
    from seq2seq.serve.batcher import BatchingTranslator
    from seq2seq.serve.metrics import Metrics
    from seq2seq.serve.requests import Limits

    expected = [t.text for t in translator.translate(MARKED)]
    settings = ["decode=greedy", "decode.max_len_a=0", "decode.max_len_b=10"]
    code, stderr, lines = translate_lines(tmp_path, MARKED, f"checkpoint={checkpoint}", *settings)
    assert code == 0 and lines == expected, stderr[-2000:]
    code, _, plain = translate_lines(tmp_path, MARKED, f"checkpoint={checkpoint}", *settings, "markup=false")
    assert code == 0 and plain == [t.text for t in translator.translate(MARKED, markup="false")]
    batcher = BatchingTranslator(lambda: Translator.from_checkpoint(checkpoint, options=OPTIONS))
    app = create_app(batcher, name="model.pt", limits=Limits(), metrics=Metrics(), error_delay_ms=0)
    with TestClient(app) as client:
        answer = client.post("/translate", json={"texts": MARKED, "beam_size": 1})
        assert answer.status_code == 200 and answer.json()["translations"] == expected, answer.text
        answer = client.post("/translate", json={"texts": MARKED[:1], "beam_size": 1, "markup": False})
        assert answer.json()["translations"] == plain[:1]
        answer = client.post("/translate", json={"texts": MARKED[:1], "markup": "html"})
        assert answer.status_code == 422
        assert answer.json()["error"] == '"markup" must be "auto", "true" or "false", got "html"'


def test_invalid_utf8_in_a_tagged_line_follows_the_encoding_policy(checkpoint, tmp_path):
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_bytes(b"in the <b>begin\xffning</b> god\nthe <i>night</i>\n")
    settings = [f"checkpoint={checkpoint}", f"input={source}", f"output={output}", "decode=greedy",
                "decode.max_len_a=0", "decode.max_len_b=8"]  # fmt: skip
    runs = {policy: run_translate(*settings, f"encoding_errors={policy}") for policy in ("strict", "replace")}
    code, stderr = runs["strict"]
    assert code == 2 and "line 1" in stderr and "encoding_errors=replace" in stderr
    assert runs["replace"][0] == 0
    lines = output.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and all(tag in lines[0] for tag in ("<b>", "</b>")) and "<i>" in lines[1]


def test_a_line_of_markup_alone_keeps_it(checkpoint, translator, tmp_path):
    lines = ["<br/>", "{0} <b></b>", "", "the night"]
    expected = [t.text for t in translator.translate(lines)]
    assert expected[:3] == ["<br/>", "{0} <b></b>", ""]
    code, stderr, written = translate_lines(tmp_path, lines, f"checkpoint={checkpoint}", "decode=greedy",
                                            "decode.max_len_a=0", "decode.max_len_b=10")  # fmt: skip
    assert code == 0 and written == expected, stderr[-2000:]
