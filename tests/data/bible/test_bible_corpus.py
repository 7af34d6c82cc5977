"""The real Bible corpus, built once per session by `seq2seq-prepare data=bible_en_es` into a fresh directory.

Needs diatheke and the sword-text-web, sword-text-sparv and sword-text-kjv modules (.ci/run
installs them); without them every test here is skipped with the reason.
"""

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from seq2seq.data.batching import TokenBatchSampler, padding_waste
from seq2seq.data.bible.prepare import prepare_bible
from seq2seq.data.tokenizer import Tokenizer

pytestmark = pytest.mark.bible
MODULES = ("engWEB2015eb", "spaRV1909eb", "engKJV2006eb")
SPLITS = ("train", "dev", "test")


def _missing_sword() -> str | None:
    if shutil.which("diatheke") is None:
        return "diatheke is not installed (apt-get install diatheke sword-text-{web,sparv,kjv})"
    listing = subprocess.run(
        ["diatheke", "-b", "system", "-k", "modulelist"], capture_output=True, text=True, check=False
    ).stdout
    missing = [m for m in MODULES if m not in listing]
    return f"SWORD modules {', '.join(missing)} are not installed" if missing else None


@pytest.fixture(scope="session")
def bible_dir(tmp_path_factory) -> Path:
    reason = _missing_sword()
    if reason:
        pytest.skip(reason)
    cwd = tmp_path_factory.mktemp("fresh")
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "seq2seq.cli.prepare", "data=bible_en_es", "data.dir=bible"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    print(f"seq2seq-prepare data=bible_en_es took {time.perf_counter() - started:.1f} s")
    return cwd / "bible"


@pytest.fixture(scope="session")
def lines(bible_dir) -> dict[str, dict[str, list[str]]]:
    return {
        split: {
            ext: (bible_dir / f"{split}.{ext}").read_text(encoding="utf-8").splitlines()
            for ext in ("en", "es", "ids")
        }
        for split in SPLITS
    }


@pytest.fixture(scope="session")
def stats(bible_dir) -> dict:
    return json.loads((bible_dir / "stats.json").read_text(encoding="utf-8"))


def _find(lines, en_ref):
    for split in SPLITS:
        for k, ids in enumerate(lines[split]["ids"]):
            if ids.split("\t")[0] == en_ref:
                return split, ids, lines[split]["en"][k], lines[split]["es"][k]
    raise AssertionError(f"{en_ref} not in the corpus")


@pytest.mark.slow
def test_split_sizes_and_words_match_the_expected_corpus(lines, stats):
    counts = {split: len(lines[split]["en"]) for split in SPLITS}
    print(f"pairs {counts}, words {stats['words']['en']['total']} en / {stats['words']['es']['total']} es")
    assert abs(sum(counts.values()) - 30_800) <= 0.02 * 30_800
    assert abs(counts["test"] - 1_470) <= 0.03 * 1_470
    assert abs(counts["dev"] - 1_540) <= 0.03 * 1_540
    assert abs(stats["words"]["en"]["total"] - 745_000) <= 0.02 * 745_000
    assert abs(stats["words"]["es"]["total"] - 698_000) <= 0.02 * 698_000
    assert stats["pairs"] == {**counts, "total": sum(counts.values())}
    assert stats["export_seconds"] < 60


@pytest.mark.slow
def test_files_are_parallel_and_have_no_empty_line(lines):
    for split in SPLITS:
        files = lines[split]
        assert len(files["en"]) == len(files["es"]) == len(files["ids"])
        for ext in ("en", "es", "ids"):
            assert all(line.strip() for line in files[ext]), f"empty line in {split}.{ext}"


# English reference -> split, the references of both sides, and how each side's text begins
KNOWN_VERSES = {
    "Gen.1.1": ("dev", "Gen.1.1\tGen.1.1", "In the beginning, God created the heavens and the earth.",
                "En el principio crió Dios los cielos y la tierra."),
    "John.3.16": (None, None, "For God so loved the world, that he gave his only born Son, that whoever",
                  "Porque de tal manera amó Dios al mundo, que ha dado á su Hijo unigénito"),
    # Num 13 keeps the Hebrew numbering in the RV1909: its 13:2 is the WEB's 13:1.
    "Num.13.1": ("train", "Num.13.1\tNum.13.2", "Yahweh spoke to Moses, saying,",
                 "Y Jehová habló á Moisés, diciendo:"),
    "Jonah.2.1": ("test", "Jonah.2.1\tJonah.2.2", "Then Jonah prayed to Yahweh",
                  "Y oró Jonás desde el vientre del pez"),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("reference", KNOWN_VERSES)
def test_known_verses_in_both_languages(lines, reference):
    split, ids, en, es = _find(lines, reference)
    expected_split, expected_ids, en_start, es_start = KNOWN_VERSES[reference]
    assert split == (expected_split or split) and ids == (expected_ids or ids)
    assert en.startswith(en_start) and es.startswith(es_start)


@pytest.mark.slow
def test_source_quirks_are_handled(lines):
    everything = [line for split in SPLITS for ext in ("en", "es") for line in lines[split][ext]]
    assert _find(lines, "Rev.22.21")[2] == "The grace of the Lord Jesus Christ be with all the saints. Amen."
    assert sum("A praise psalm by David" in line for line in everything) == 1  # not repeated after Ps 145
    assert not any(re.search(r"\b[GH]\d{2,4}\b|<|>", line) for line in everything)  # no Strong's, no markup
    refs = {ids.split("\t")[0].split(".")[0] for split in SPLITS for ids in lines[split]["ids"]}
    assert len(refs) == 66 and "Tob" not in refs  # the WEB's deuterocanon has no counterpart
    spanish_openings = [_find(lines, ref)[3] for ref in ("Exod.1.1", "Ezek.1.1", "John.9.1")]
    assert spanish_openings[1].startswith("Y fué que á los treinta años")  # not "Y FUÉqueá"
    assert spanish_openings[2].startswith("Y pasando Jesús, vió")


@pytest.mark.slow
def test_no_glued_words(lines):
    """Checked on every line, not a sample: words glued where markup was removed would show here."""
    everything = [line for split in SPLITS for ext in ("en", "es") for line in lines[split][ext]]
    glued = [m.group(0) for line in everything for m in re.finditer(r"\w*[a-zà-ÿ][A-ZÀ-Þ]\w*", line)]
    assert glued == []
    after_punctuation = {
        m.group(0) for line in everything for m in re.finditer(r"\S*[a-zà-ÿ][.,;:!?][^\W\d_]\S*", line)
    }
    assert after_punctuation <= {"man,having"}  # a typo in the WEB itself (Rev 1:13)
    assert not any("Godcreated" in line or "FUÉque" in line for line in everything)


@pytest.mark.slow
def test_every_drop_is_listed_with_a_reason(bible_dir, stats):
    rows = (bible_dir / "dropped.tsv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == "en\tes\treason\tdetail"
    drops = [row.split("\t") for row in rows[1:]]
    assert len(drops) == stats["dropped_total"] == sum(stats["dropped"].values())
    reasons = {row[2] for row in drops}
    assert reasons <= {
        "empty in engWEB2015eb",
        "empty in spaRV1909eb",
        "no counterpart in engWEB2015eb",
        "no counterpart in spaRV1909eb",
        "length mismatch",
    }
    assert ["", "Num.12.16", "empty in spaRV1909eb", ""] in drops
    assert stats["re_paired_by_chapter"]["Num.13"] >= 30 and stats["re_paired_by_chapter"]["Job.39"] >= 20


@pytest.mark.slow
def test_a_second_prepare_is_a_no_op(bible_dir, stats):
    before = (bible_dir / "train.en").stat().st_mtime_ns
    started = time.perf_counter()
    again = prepare_bible(
        out_dir=bible_dir,
        modules={"en": "engWEB2015eb", "es": "spaRV1909eb"},
        strongs_from={"en": "engKJV2006eb"},
        packages={},
        install_missing=False,
    )
    assert time.perf_counter() - started < 2
    assert again == stats and (bible_dir / "train.en").stat().st_mtime_ns == before


@pytest.mark.slow
def test_padding_waste_on_a_sample_of_the_training_set(lines):
    en, es = lines["train"]["en"][:6000], lines["train"]["es"][:6000]
    tokenizer = Tokenizer.train(en + es, vocab_size=4000, model_type="bpe")
    src = np.array([len(ids) + 1 for ids in tokenizer.encode_batch(en)])
    tgt = np.array([len(ids) + 1 for ids in tokenizer.encode_batch(es)])
    for max_tokens in (4096, 8192):
        waste = padding_waste(TokenBatchSampler(src, tgt, max_tokens=max_tokens, seed=1).batches(0), src, tgt)
        print(f"padding waste at max_tokens={max_tokens}: {waste:.1%}")
        assert waste <= 0.10
