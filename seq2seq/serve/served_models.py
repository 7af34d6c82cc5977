"""The models one server serves, and which of them translates each text of a request.

`seq2seq-serve checkpoint=[a.pt,b.pt]` loads each model behind its own BatchingTranslator (its own
worker thread, queue and batches); ServedModels routes every text by its language pair:

- a text's pair is its `src_lang` and `tgt_lang`, else the server's `src_lang` / `tgt_lang` settings;
  `src_lang=auto` is first resolved by detecting the text's language among every served source language;
- the first model in the list that translates that pair takes the text (a multilingual model serves
  all of its directions; a one-pair model the pair its training recorded);
- a text that names no language on a side goes to the first model that serves the side it does name,
  and one that names none to the first model, which uses its own default languages;
- a pair no model serves is refused by name (422 here; the LibreTranslate API answers it as a 400),
  naming the pairs that are served.

The texts of one request that go to different models are searched by each, concurrently, and answered
together in their order. With one model nothing is routed: a request goes to it as it is, so the server
answers exactly as the model's Translator does in Python (its own errors for codes it lacks).

Whole files (our API's "format": html | xliff | po, the LibreTranslate API's file uploads) take the same
path: `translate_documents` reads each file in a worker thread (seq2seq.inference.document_formats) and
sends its segments through `translate`, so they are batched and routed as any request's texts.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seq2seq.errors import UserError
from seq2seq.inference.api import AUTO, Translator, detect, language_name, translate_document_text
from seq2seq.serve.batcher import Answer, BatchingTranslator
from seq2seq.serve.requests import HTTPError, ParsedRequest, prepare_request

# (segments, markup mode) -> their translations; a reader of one kind of file: (the file, Segments) -> the
# file with its segments translated (seq2seq.inference.document_formats' Translate and handlers)
Segments = Callable[[Sequence[str], str], list[str]]
Document = Callable[[str, Segments], str]
FILE_SAMPLE = 10_000  # characters of a file's segments that tell its language (auto_per_file)


class ServedModel:
    """One model of the server: its name (in answers and /health) and its batcher."""

    def __init__(self, name: str, batcher: BatchingTranslator) -> None:
        self.name, self.batcher = name, batcher
        self.languages = batcher.translator.model_languages()

    @property
    def translator(self) -> Translator:
        return self.batcher.translator


@dataclass
class Routed:
    """A request's answer: per text its n-best, the name of the model that translated it, and its
    detected language where src_lang was auto (None otherwise)."""

    ranked: Answer
    names: list[str]
    detected: list[Any] | None = None


class ServedModels:
    """The server's models, in the order given (the first is the default), and the routing rule above.
    `src_lang` / `tgt_lang`: the server's languages for texts that name none."""

    def __init__(
        self, models: Sequence[ServedModel], *, src_lang: str | None = None, tgt_lang: str | None = None
    ) -> None:
        if not models:
            raise ValueError("a server needs a model")
        self.models, self.src_lang, self.tgt_lang = list(models), src_lang, tgt_lang

    def __iter__(self) -> Iterator[ServedModel]:
        return iter(self.models)

    def __len__(self) -> int:
        return len(self.models)

    @property
    def default(self) -> ServedModel:
        return self.models[0]

    @property
    def healthy(self) -> bool:
        return all(model.batcher.healthy for model in self.models)

    @property
    def waiting(self) -> int:
        return sum(model.batcher.waiting for model in self.models)

    def close(self) -> None:
        for model in self.models:
            model.batcher.close()

    def stats(self) -> dict[str, int]:
        """The batching counters of GET /stats, summed over the models (largest_*: the largest)."""
        total: dict[str, int] = {}
        for model in self.models:
            for key, value in model.batcher.stats.__dict__.items():
                total[key] = max(total.get(key, 0), value) if key.startswith("largest") else (
                    total.get(key, 0) + value
                )  # fmt: skip
        return total

    def sources(self) -> list[str]:
        """Every language some model reads, sorted."""
        return sorted({code for model in self.models for code in model.languages.sources})

    def listed(self) -> list[dict[str, Any]]:
        """GET /languages: each source language, its name and every language it is translated into."""
        return [
            {"code": code, "name": language_name(code), "targets": sorted({
                t for model in self.models for t in model.languages.targets if model.languages.serves(code, t)
            })}
            for code in self.sources()
        ]  # fmt: skip

    def detect(self, texts: Sequence[str]) -> list[Any]:
        """Per text, its language among those the models read (seq2seq.inference.language_detection)."""
        codes = self.sources()
        if not codes:
            raise UserError("src_lang=auto needs a model that knows the languages it reads; this server's "
                            "record none: name src_lang, or leave it out")  # fmt: skip
        return detect(texts, codes)

    def route(self, src: str | None, tgt: str | None) -> ServedModel:
        """The model that translates src -> tgt (None: the side is not named), or a 422 naming the pairs."""
        if src is None and tgt is None:
            return self.default
        for model in self.models:
            if model.languages.serves(src, tgt):
                return model
        raise HTTPError(422, f"{src or 'any'} -> {tgt or 'any'} is not served here; this server translates "
                             f"{self.pairs_named()}")  # fmt: skip

    def pairs_named(self) -> str:
        """The served pairs, short: "en -> es, en -> fr" (a multilingual model's as its languages)."""
        named = []
        for model in self.models:
            languages = model.languages
            if len(languages.sources) * len(languages.targets) > 6:
                named.append(f"{'/'.join(languages.sources)} -> {'/'.join(languages.targets)}")
            else:
                named.extend(f"{s} -> {t}" for s, t in languages.pairs())
        return ", ".join(named) or "the default languages only"

    async def translate(
        self, parsed: ParsedRequest, *, markup: str | None = None, route: bool = False
    ) -> Routed:
        """The request's translations. `route`: route even with one model (the LibreTranslate API, whose
        requests always name their pair); with several models every request is routed."""
        if len(self.models) == 1 and not route:
            model = self.default
            if self.src_lang == AUTO:  # the server's src_lang=auto: detected per text, by the pipeline
                detected = _per_text(parsed.src_lang, len(parsed.texts), AUTO)
                parsed = dataclasses.replace(parsed, src_lang=detected)
            ranked = await model.batcher.translate(prepare_request(model.translator, parsed, markup))
            return Routed(ranked, [model.name] * len(ranked))
        count = len(parsed.texts)
        src = _per_text(parsed.src_lang, count, self.src_lang)
        tgt = _per_text(parsed.tgt_lang, count, self.tgt_lang)
        detected = self._resolve_auto(parsed.texts, src)
        groups: dict[int, list[int]] = {}  # model number -> its texts' numbers
        for index, text in enumerate(parsed.texts):
            model = self.route(src[index], tgt[index]) if text.strip() else self.default
            groups.setdefault(self.models.index(model), []).append(index)
        answers = await asyncio.gather(*(
            self._search(self.models[number], parsed, indices, src, tgt, markup)
            for number, indices in groups.items()
        ))  # fmt: skip
        ranked: list[Any] = [None] * count
        names = [""] * count
        for (number, indices), answer in zip(groups.items(), answers):
            for index, nbest in zip(indices, answer):
                ranked[index], names[index] = nbest, self.models[number].name
        return Routed(ranked, names, detected)

    async def translate_documents(
        self, parsed: ParsedRequest, deadline: float, *, route: bool = False,
        document: Document | None = None, auto_per_file: bool = False,
    ) -> tuple[list[str], list[str]]:  # fmt: skip
        """Each text of `parsed` a whole file in its `format` (or read by `document`), its segments translated
        as `translate` translates texts (`route`: as there), from a worker thread that waits for the
        batchers' answers until `deadline` (the event loop's clock): (the files, the names of the models
        that translated, in order). src_lang=auto is detected per segment, as for texts, or with
        `auto_per_file` once per file, over its segments together. A file the reader refuses: 422; no
        answer by the deadline: 504, and the segments still queued are dropped."""
        loop = asyncio.get_running_loop()
        served: dict[str, None] = {}  # the names of the models that translated, in order
        file_languages: dict[int, str] = {}  # with auto_per_file: each file's detected language

        async def search(file: int, texts: list[str], markup: str) -> list[str]:
            languages = {
                name: codes[file] if isinstance(codes, list) else codes
                for name, codes in (("src_lang", parsed.src_lang), ("tgt_lang", parsed.tgt_lang))
            }
            if auto_per_file and (languages["src_lang"] or self.src_lang) == AUTO:
                if file not in file_languages:
                    file_languages[file] = self._file_language(file, texts)
                languages["src_lang"] = file_languages[file]
            segments = dataclasses.replace(parsed, texts=texts, format="text", **languages)
            routed = await self.translate(segments, markup=markup, route=route)
            served.update(dict.fromkeys(routed.names))
            return [ranked[0].text for ranked in routed.ranked]

        def segments_of(file: int) -> Segments:
            def segments(texts: Sequence[str], markup: str) -> list[str]:
                if not texts:
                    return []
                found = asyncio.run_coroutine_threadsafe(search(file, list(texts), markup), loop)
                try:
                    return found.result(timeout=max(0.0, deadline - loop.time()))
                except TimeoutError:
                    found.cancel()  # its search leaves the queue if it has not started
                    raise

            return segments

        def read(text: str, segments: Segments) -> str:
            return translate_document_text(text, parsed.format, segments)

        def translate_all() -> list[str]:
            return [(document or read)(text, segments_of(file)) for file, text in enumerate(parsed.texts)]

        try:
            files = await asyncio.to_thread(translate_all)
        except UserError as error:
            raise HTTPError(422, str(error)) from None
        except TimeoutError:
            raise HTTPError(504, "no answer within request_timeout_s; the request was dropped") from None
        return files, list(served)

    def _file_language(self, file: int, texts: Sequence[str]) -> str:
        """The language of a file's segments, detected over them together (their first FILE_SAMPLE
        characters); a 422 naming a language no model reads."""
        try:
            [item] = self.detect(["\n".join(texts)[:FILE_SAMPLE]])
        except UserError as error:
            raise HTTPError(422, str(error)) from None
        if item.code is None:
            raise HTTPError(422, f"file {file} reads as {item.name} ({item.iso}); this server translates "
                                 f"from {', '.join(self.sources())} only")  # fmt: skip
        return item.code

    def _resolve_auto(self, texts: Sequence[str], src: list[str | None]) -> list[Any] | None:
        """Replaces each src_lang=auto of a text in `src` by its detected language (a text in a language no
        model reads: a 422 naming it); the detections, per text (None where not asked)."""
        asked = [index for index, code in enumerate(src) if code == AUTO]
        if not asked:
            return None
        found: list[Any] = [None] * len(texts)
        try:
            for index, item in zip(asked, self.detect([texts[i] for i in asked])):
                found[index] = item
        except UserError as error:
            raise HTTPError(422, str(error)) from None
        for index in asked:
            item = found[index]
            if item.code is None and texts[index].strip():
                raise HTTPError(422, f"sentence {index} reads as {item.name} ({item.iso}); this server "
                                     f"translates from {', '.join(self.sources())} only")  # fmt: skip
            src[index] = item.code if texts[index].strip() else None
        return found

    async def _search(
        self, model: ServedModel, parsed: ParsedRequest, indices: list[int], src: list[str | None],
        tgt: list[str | None], markup: str | None,
    ) -> Answer:  # fmt: skip
        """The texts at `indices`, searched by `model` with its own search settings, told their languages
        where it takes codes."""
        languages = model.languages
        pick = lambda values: [values[i] for i in indices] if values is not None else None  # noqa: E731
        part = dataclasses.replace(
            parsed,
            texts=pick(parsed.texts),
            constraints=pick(parsed.constraints),
            src_lang=[src[i] for i in indices] if languages.source_codes else None,
            tgt_lang=[tgt[i] for i in indices] if languages.target_codes else None,
            options=parsed.options_for(model.translator),
        )
        prepared = prepare_request(model.translator, part, markup, indices=indices)
        return await model.batcher.translate(prepared)


def _per_text(value: Any, count: int, default: str | None) -> list[str | None]:
    """A request's src_lang or tgt_lang as one code (or None) per text, the server's where none is named."""
    values = value if isinstance(value, list) else [value] * count
    return [default if code is None else code for code in values]


def model_names(checkpoints: Sequence[Sequence[str]]) -> list[str]:
    """Each model's name in answers and /health: its checkpoint's file name (an ensemble's joined by +),
    with the folder too where two models would share a name (runs/a/best.pt, runs/b/best.pt)."""
    plain = ["+".join(Path(path).name for path in paths) for paths in checkpoints]
    return [
        "+".join(f"{Path(p).parent.name}/{Path(p).name}" for p in paths) if plain.count(name) > 1 else name
        for paths, name in zip(checkpoints, plain)
    ]


__all__ = ["Document", "Routed", "Segments", "ServedModel", "ServedModels", "model_names"]
