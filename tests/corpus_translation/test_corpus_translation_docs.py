"""The Python examples of the manual's pages on back-translation, distillation and QE data run as written,
in a project directory that holds the files they name (tiny models with their languages recorded, a few
lines of text), and write what they say."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from tiny_models import save_tiny_checkpoint, sentences, tiny_model, tiny_tokenizer

DOCS = Path(__file__).resolve().parents[2] / "docs"


def model(path: Path, src: str, tgt: str, *, seed: int = 0) -> None:
    tokenizer = tiny_tokenizer()
    path.parent.mkdir(parents=True, exist_ok=True)
    network = tiny_model(tokenizer.vocab_size, seed=seed, sharpness=4.0, max_positions=32)
    languages = {"data": {"src_lang": src, "tgt_lang": tgt}}  # as training records them
    save_tiny_checkpoint(path, network, tokenizer, step=3, config=languages)


def text(path: Path, count: int, seed: int) -> None:
    path.write_text("".join(line + "\n" for line in sentences(count, seed=seed)), encoding="utf-8")


def backtranslation_project(root: Path) -> list[Path]:
    model(root / "runs/bible.es-en/best.pt", "es", "en")
    text(root / "mono.es", 6, seed=1)
    return [root / "bt/mono/bt.en", root / "bt/mono/bt.es", root / "bt/mono/report.json"]


def distillation_project(root: Path) -> list[Path]:
    model(root / "runs/teacher/averaged.pt", "en", "es")
    text(root / "train.en", 6, seed=2)
    return [root / "distilled/distill.en", root / "distilled/distill.es", root / "distilled/dropped.tsv"]


def qe_data_project(root: Path) -> list[Path]:
    for name, seed in (("checkpoint_300", 1), ("best", 0)):
        model(root / f"runs/quickstart/{name}.pt", "en", "es", seed=seed)
    for split, count in (("train", 6), ("dev", 3)):
        for lang, seed in (("en", 3), ("es", 4)):
            text(root / f"{split}.{lang}", count, seed=seed)
    return [root / "runs/qe_data" / name for name in ("train.tsv", "dev.tsv", "summary.json")]


EXAMPLES: dict[str, tuple[str, Callable[[Path], list[Path]]]] = {
    "back-translation.md": ("import BacktranslateSettings, backtranslate", backtranslation_project),
    "distillation.md": ("import DistillSettings, ScoreFilter, distill", distillation_project),
    "quality-estimation.md": ("import QeDataSettings, make_qe_data", qe_data_project),
}


def python_example(page: str, marker: str) -> str:
    """The page's one ```python block that contains `marker`."""
    text = (DOCS / page).read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    found = [block for block in blocks if marker in block]
    assert len(found) == 1, f"{page} has {len(found)} python blocks with {marker!r}"
    return found[0]


@pytest.mark.parametrize("page", sorted(EXAMPLES))
def test_the_pages_python_example_runs_as_written(page, tmp_path, monkeypatch, capsys):
    marker, project = EXAMPLES[page]
    code = python_example(page, marker)
    outputs = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(DOCS / page), "exec"), {"__name__": "__docs__"})
    for path in outputs:
        assert path.is_file(), f"{page}'s example wrote no {path.relative_to(tmp_path)}"
    assert capsys.readouterr().out.strip()  # what it prints: counts and where the files are
