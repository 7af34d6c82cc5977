"""The parallel-corpus reader on small files these tests write: normal input and every documented mistake."""

import pytest

from seq2seq.data.corpus import CorpusStats, iter_corpus_lines, normalize, read_parallel
from seq2seq.data.tsv import iter_tsv, prepare_tsv
from seq2seq.errors import UserError


def read_lines(path, **settings) -> list[str]:
    return list(iter_corpus_lines(path, **settings))


def _write(path, data: bytes | str):
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def test_lines_are_normalised_to_nfc_with_single_spaces(tmp_path):
    decomposed = "Adán y Eva".replace("á", "a\u0301")
    file = _write(tmp_path / "a.txt", f"\ufeff  {decomposed}\t dijo\r\nsecond\x07 line\n\n  \nlast")
    assert read_lines(file) == ["Adán y Eva dijo", "second line", "", "", "last"]
    assert normalize("a\u00a0b\u2009c") == "a b c"


def test_parallel_files_give_aligned_pairs(tmp_path):
    src = _write(tmp_path / "train.en", "In the beginning.\nGod said.\n")
    tgt = _write(tmp_path / "train.es", "En el principio.\nDijo Dios.\n")
    assert read_parallel(src, tgt) == (["In the beginning.", "God said."], ["En el principio.", "Dijo Dios."])


def test_mismatched_line_counts_name_both_files_and_counts(tmp_path):
    src = _write(tmp_path / "train.en", "one\ntwo\nthree\n")
    tgt = _write(tmp_path / "train.es", "uno\ndos\n")
    with pytest.raises(UserError) as error:
        read_parallel(src, tgt)
    assert str(error.value) == (
        f"{src} has 3 lines but {tgt} has 2; parallel files need exactly one translation per line"
    )


def test_a_final_line_without_newline_counts_once(tmp_path):
    src = _write(tmp_path / "a", "one\ntwo")
    tgt = _write(tmp_path / "b", "uno\ndos\n")
    assert read_parallel(src, tgt) == (["one", "two"], ["uno", "dos"])


def test_invalid_utf8_names_file_line_and_byte(tmp_path):
    file = _write(tmp_path / "bad.es", b"bien\nmal \xe1rbol\n")
    with pytest.raises(UserError) as error:
        read_lines(file)
    assert str(error.value) == (
        f"{file}:2: invalid UTF-8 (byte 0xe1 at column 5); fix the file or set data.encoding_errors=replace"
    )


def test_replace_policy_keeps_the_line_with_a_replacement_character(tmp_path, caplog):
    file = _write(tmp_path / "bad.es", b"bien\nmal \xe1rbol\n")
    assert read_lines(file, encoding_errors="replace") == ["bien", "mal \ufffdrbol"]
    assert "replaced invalid UTF-8 in 1 lines" in caplog.text


def test_unknown_policy_is_rejected(tmp_path):
    with pytest.raises(UserError, match="encoding_errors='ignore' is not supported"):
        read_lines(_write(tmp_path / "a", "x\n"), encoding_errors="ignore")


def test_missing_file_is_named(tmp_path):
    with pytest.raises(UserError, match=r"missing\.en: no such file; check the path in the data config"):
        read_lines(tmp_path / "missing.en")


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(UserError, match="is not a file"):
        read_lines(tmp_path)


@pytest.mark.parametrize("content", [b"", b"\n\n \n", b"\xef\xbb\xbf"])
def test_empty_file_is_an_error(tmp_path, content):
    file = _write(tmp_path / "empty.en", content)
    with pytest.raises(UserError, match=r"empty\.en is empty; a corpus file needs one sentence per line"):
        read_lines(file)


def test_a_100k_character_line_is_read_whole(tmp_path):
    long_line = "palabra " * 12_500
    src = _write(tmp_path / "a.en", "short\n" + "word " * 20_000 + "\n")
    tgt = _write(tmp_path / "a.es", "corta\n" + long_line + "\n")
    source, target = read_parallel(src, tgt)
    assert len(target[1]) == 99_999 and len(source[1]) == 99_999
    stats = CorpusStats()
    for pair in zip(source, target):
        stats.add(*pair)
    assert stats.longest_line_words == 20_000


def test_tsv_columns_and_errors(tmp_path):
    file = _write(tmp_path / "c.tsv", "hello\thola\t0.9\nbye\tadiós\t0.8\n")
    assert list(iter_tsv(file)) == [("hello", "hola"), ("bye", "adiós")]
    assert list(iter_tsv(file, src_column=1, tgt_column=0)) == [("hola", "hello"), ("adiós", "bye")]
    bad = _write(tmp_path / "bad.tsv", "hello\thola\nno tab here\n")
    with pytest.raises(UserError, match=r"bad\.tsv:2: expected at least 2 tab-separated columns, found 1"):
        list(iter_tsv(bad))
    latin1 = _write(tmp_path / "latin1.tsv", "hello\thola\nyes\tsí\n".encode("latin-1"))
    with pytest.raises(UserError, match=r"latin1\.tsv:2: invalid UTF-8"):
        list(iter_tsv(latin1))


def test_prepare_tsv_writes_plain_files_per_split(tmp_path):
    train = _write(tmp_path / "train.tsv", "a\tb\nc\td\n")
    dev = _write(tmp_path / "dev.tsv", "e\tf\n")
    stats = prepare_tsv(
        out_dir=tmp_path / "out", tsv={"train": train, "dev": dev, "test": None}, src_lang="de", tgt_lang="en"
    )
    assert (tmp_path / "out" / "train.de").read_text() == "a\nc\n"
    assert (tmp_path / "out" / "dev.en").read_text() == "f\n"
    assert stats["train"]["pairs"] == 2 and "test" not in stats
    with pytest.raises(UserError, match=r"data\.tsv\.dev is not set"):
        prepare_tsv(out_dir=tmp_path, tsv={"train": train, "dev": None}, src_lang="de", tgt_lang="en")
