"""An exported decoder-only model run by CTranslate2's Generator: the encoder-decoder's CTranslate2 engine
(seq2seq.inference.engines) with another runner, prompt and length limit; the batching loop, the settings
and the constrained sentences' fallback to our engine are shared.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from seq2seq.decode.hypotheses import Hypothesis
from seq2seq.decode.options import SearchOptions
from seq2seq.errors import UserError
from seq2seq.inference.engines import CTranslate2Engine, batch_limit, checked_log_probs, pieces_of


class CTranslate2DecoderOnlyEngine(CTranslate2Engine):
    """An exported decoder-only model run by CTranslate2's Generator.

    The prompt is what our DecoderOnly reads before its first output: the source with its eos, the tag
    (bos), then a forced prefix if any. Only the tokens after the prompt are generated, scored and
    counted in the limit; the prefix is put back in front of them, so outputs mean what ours mean.
    A sentence's room is what the model's positions leave after its prompt (DecoderOnly.output_room).
    """

    @staticmethod
    def _runner_class(ctranslate2: Any) -> Any:
        return ctranslate2.Generator

    def _search_batch(
        self, sources: list[list[int]], forced: list[list[int]] | None, options: SearchOptions,
        suppressed: list[list[str]],
    ) -> list[list[Hypothesis]]:  # fmt: skip
        forced = forced if forced is not None else [[] for _ in sources]
        rooms = [self._room(source, prefix) for source, prefix in zip(sources, forced)]
        # Both limits count the tokens after the prompt, a forced prefix being part of it; ours count
        # the prefix too, hence the shift (exact when the batch's prefixes are equally long, e.g. none).
        already = [len(prefix) for prefix in forced]
        limit = batch_limit(options, [len(s) for s in sources], rooms, already=already)
        prompts = [
            pieces_of(self.src_tokenizer, source) + pieces_of(self.tgt_tokenizer, [self.ids.bos, *prefix])
            for source, prefix in zip(sources, forced)
        ]
        settings = {
            **self._settings(options, suppressed), "include_prompt_in_result": False, "max_length": limit,
            "min_length": min(max(options.min_len - max(already), 0), limit),
        }  # fmt: skip
        outputs = self.runner.generate_batch(prompts, **settings)
        results = []
        for prefix, output in zip(forced, outputs):
            start = pieces_of(self.tgt_tokenizer, prefix)
            results.append([self._hypothesis(start + h, s) for h, s in zip(output.sequences, output.scores)])
        return results

    def _score_batch(self, sources: list[list[int]], outputs: list[list[int]]) -> list[list[float]]:
        """Generator.score_batch over `source <tag> output </s>` (the prompt as `_search_batch` builds it,
        a forced prefix being part of the output): it gives one log-probability per token after the
        first; the last len(output) + 1 are the output's and eos's."""
        tag, eos = [self.ids.bos], [self.ids.eos]
        results = self.runner.score_batch(
            [pieces_of(self.src_tokenizer, source) + pieces_of(self.tgt_tokenizer, [*tag, *output, *eos])
             for source, output in zip(sources, outputs)], max_input_length=0,
        )  # fmt: skip
        return [
            checked_log_probs(list(result.log_probs)[-(len(output) + 1) :], len(output) + 1)
            for result, output in zip(results, outputs)
        ]

    def output_room(self, src: Tensor) -> Tensor:
        """As DecoderOnly.output_room: max_positions - source - tag, per sentence (the Translator's
        input limit asks it). Shapes: src (B, S) right-padded -> (B,)."""
        return self.max_positions - (src != self.ids.pad).sum(dim=1) - 1

    def _room(self, source: list[int], prefix: list[int]) -> int:
        """Output tokens after `prefix` that the positions left by `source <tag> prefix` allow."""
        room = self.max_positions - len(source) - 1
        if room < 0:
            raise UserError(
                f"a source of {len(source)} tokens leaves no room for output in the model's "
                f"{self.max_positions} positions; shorten the input or split it"
            )
        if len(prefix) > room:
            raise UserError(
                f"a forced prefix of {len(prefix)} tokens does not fit the {room} positions its source "
                "leaves; shorten the prefix"
            )
        return room - len(prefix)


__all__ = ["CTranslate2DecoderOnlyEngine"]
