"""benchmarks/terminology.py builds its terminology test as its docstring says: rare words before names,
the rarer first, no first word of a verse, no capitalised common word, no term inside another.

The script is not a package module: it is loaded from its file, as tests/docs loads docs/hooks. Its
builder needs the standard library only, so this test loads no model code.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]


def _script():
    path = REPOSITORY / "benchmarks" / "terminology.py"
    spec = importlib.util.spec_from_file_location("terminology_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["terminology_benchmark"] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


terminology = _script()

# Counts: Jehová 3, Moisés 2, Israel 2, Dios 1 (always capitalised: names); "entonces" 3 + "Entonces" 1
# and "señor" 1 + "Señor" 1 (mostly lowercase: not names); pueblo 4 and ofreció 4 (too common to be
# rare); desierto 2 and holocausto 1 (rare).
TRAIN = """\
Y dijo Jehová á Moisés: Habla á los hijos de Israel, y ofrecerán holocausto.
Y Moisés habló al pueblo, y el pueblo oyó; entonces ofreció Israel.
entonces el pueblo se fué al desierto, y ofreció.
Y el Señor dijo: entonces vendrá el señor de la casa del pueblo.
Jehová ofreció al desierto; Jehová es Dios. Entonces ofreció.
"""

REFERENCE = """\
Entonces Jehová dijo á Moisés en el desierto de Galaad: ofreció holocaustos, holocaustos.
Y el pueblo dijo: Entonces, Señor, ¿qué será?
Israel ofreció holocaustos y un holocausto á Dios en Galaad.
"""


def _build(tmp_path: Path, per_sentence: int) -> list[list[tuple[str, str, int]]]:
    (tmp_path / "train.es").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "test.es").write_text(REFERENCE, encoding="utf-8")
    chosen = terminology.build(tmp_path / "test.es", tmp_path / "train.es", per_sentence=per_sentence, rare=3)
    assert all(term.in_reference for terms in chosen for term in terms)
    return [[(t.text, t.kind, t.train_count) for t in terms] for terms in chosen]


def test_two_terms_per_sentence(tmp_path: Path) -> None:
    assert _build(tmp_path, 2) == [
        [("holocaustos", "rare", 0), ("desierto", "rare", 2)],
        [],  # "Entonces" and "Señor" are mostly lowercase in train.es; pueblo is not rare
        [("holocaustos", "rare", 0), ("Galaad", "name", 0)],  # holocausto is inside holocaustos
    ]


def test_all_candidates_in_order(tmp_path: Path) -> None:
    assert _build(tmp_path, 10) == [
        [("holocaustos", "rare", 0), ("desierto", "rare", 2), ("Galaad", "name", 0), ("Moisés", "name", 2),
         ("Jehová", "name", 3)],
        [],
        [("holocaustos", "rare", 0), ("Galaad", "name", 0), ("Dios", "name", 1)],  # Israel opens the verse
    ]  # fmt: skip


def test_constraints_file_and_summary(tmp_path: Path) -> None:
    (tmp_path / "train.es").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "test.es").write_text(REFERENCE, encoding="utf-8")
    chosen = terminology.build(tmp_path / "test.es", tmp_path / "train.es")
    terminology.write_constraints(tmp_path / "out" / "test.constraints", chosen)
    written = (tmp_path / "out" / "test.constraints").read_text(encoding="utf-8")
    assert written == "holocaustos\tdesierto\n\nholocaustos\tGalaad\n"
    summary = terminology.summarize(chosen, 2)
    assert summary["sentences_with_n_terms"] == {0: 1, 1: 0, 2: 2}
    assert (summary["names"], summary["rare_words"], summary["terms_in_reference"]) == (1, 3, 4)


def test_word_boundaries() -> None:
    assert terminology.occurs("Israel", "hijos de Israel.")
    assert not terminology.occurs("Israel", "los Israelitas")
    assert terminology.occurs("Israel", "Israelitas e Israel")
    assert terminology.occurs("Ben-adad", "dijo Ben-adad: Ve")
    assert not terminology.occurs("adad", "dijo Ben-adad2")
    assert terminology.words("¿Qué dijo «Ben-adad»? (nada).") == ["Qué", "dijo", "Ben-adad", "nada"]
