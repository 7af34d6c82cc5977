"""Word alignments of a parallel corpus from a statistical aligner: eflomal (an optional extra,
`pip install 'seq2seq[alignment]'`), run in both directions and symmetrized with grow-diag-final-and, the
heuristic of Moses and fast_align's atools. Words are what `words` splits a line into: runs of letters
and digits, and each other non-space character alone (so "earth." is two words).

What the reference alignments of the markup benchmark (benchmarks/markup.py) are made of; links are
(source word, target word) pairs, 0-based.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from seq2seq.errors import UserError

Links = list[tuple[int, int]]
_WORD = re.compile(r"\w+|[^\w\s]")
_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def words(line: str) -> list[str]:
    return _WORD.findall(line)


def word_spans(line: str) -> list[tuple[int, int]]:
    """Each word's [start, end) characters in `line`."""
    return [(m.start(), m.end()) for m in _WORD.finditer(line)]


def symmetrized(forward: Iterable[tuple[int, int]], reverse: Iterable[tuple[int, int]]) -> Links:
    """grow-diag-final-and: the intersection of both directions, grown by neighbouring links of their
    union that cover a still unaligned word, then (final-and) union links whose two words are both
    still unaligned. Sorted."""
    forward, reverse = set(forward), set(reverse)
    union = forward | reverse
    links = forward & reverse
    grew = True
    while grew:
        grew = False
        for s, t in sorted(links):
            for ds, dt in _NEIGHBOURS:
                candidate = (s + ds, t + dt)
                if (
                    candidate in union
                    and candidate not in links
                    and _uncovered(candidate, links, either=True)
                ):
                    links.add(candidate)
                    grew = True
    for direction in (forward, reverse):
        for candidate in sorted(direction):
            if candidate not in links and _uncovered(candidate, links, either=False):
                links.add(candidate)
    return sorted(links)


def _uncovered(link: tuple[int, int], links: set[tuple[int, int]], *, either: bool) -> bool:
    """Whether the link's source word or (either) / and (not either) its target word has no link yet."""
    source_free = all(s != link[0] for s, _ in links)
    target_free = all(t != link[1] for _, t in links)
    return (source_free or target_free) if either else (source_free and target_free)


def parse_links(line: str) -> Links:
    """ "0-0 1-2" -> [(0, 0), (1, 2)]."""
    return [(int(s), int(t)) for s, t in (pair.split("-") for pair in line.split())]


def align_corpus(sources: Sequence[str], targets: Sequence[str]) -> list[Links]:
    """Per line pair, the symmetrized eflomal alignment of their words (`words`). eflomal samples: two
    runs may differ a little."""
    if len(sources) != len(targets):
        raise UserError(f"cannot align {len(sources)} source lines with {len(targets)} target lines")
    return align_words([words(line) for line in sources], [words(line) for line in targets])


def align_words(sources: Sequence[Sequence[str]], targets: Sequence[Sequence[str]]) -> list[Links]:
    """Per pair of word lists (no word empty or with spaces), their symmetrized eflomal alignment."""
    try:
        import eflomal
    except ImportError:
        raise UserError(
            "word alignment needs eflomal: pip install 'seq2seq[alignment]'"
        ) from None
    with tempfile.TemporaryDirectory() as folder:
        forward, reverse = Path(folder) / "fwd", Path(folder) / "rev"
        aligner = eflomal.Aligner()
        aligner.align(
            [" ".join(line) + "\n" for line in sources],
            [" ".join(line) + "\n" for line in targets],
            links_filename_fwd=str(forward),
            links_filename_rev=str(reverse),
        )
        pairs = zip(forward.read_text().splitlines(), reverse.read_text().splitlines())
        return [symmetrized(parse_links(f), parse_links(r)) for f, r in pairs]
