"""What a run tells the user: a progress bar (or plain log lines), and TensorBoard scalars, text, images.

Only the main rank reports; other ranks get a reporter that does nothing.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class Reporter:
    """Aggregates per-update numbers over `log_every` updates and writes them out."""

    def __init__(
        self, *, log_dir: Path | None, progress_bar: bool | None = None, enabled: bool = True,
        units: str = "tokens", perplexity: bool = True,
    ) -> None:  # fmt: skip
        """`units`: what an update's `tokens` count (a QE run's are pairs); `perplexity`: log exp(nll),
        which means something only for a token-level cross-entropy."""
        self.enabled, self.units, self.perplexity = enabled, units, perplexity
        self.writer = None
        if enabled and log_dir is not None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir=str(log_dir))
        self.use_bar = enabled and (sys.stderr.isatty() if progress_bar is None else progress_bar)
        self.bar = None
        self._total_tokens = 0.0
        self._total_seconds = 0.0
        self._reset_window()

    @property
    def mean_tokens_per_second(self) -> float:
        """Target tokens per second of pure training (forward, backward, update) over the whole run."""
        return self._total_tokens / max(self._total_seconds, 1e-9)

    def _reset_window(self) -> None:
        self._loss = self._nll = self._tokens = 0.0
        self._updates = 0
        self._window_start = time.perf_counter()

    def start(self, *, total_updates: int, initial: int) -> None:
        if self.use_bar:
            from tqdm import tqdm
            from tqdm.contrib.logging import logging_redirect_tqdm

            self.bar = tqdm(
                total=total_updates, initial=initial, unit="upd", dynamic_ncols=True, desc="train"
            )
            self._redirect = logging_redirect_tqdm()
            self._redirect.__enter__()

    def update(
        self,
        *,
        step: int,
        loss: float,
        nll: float,
        lr: float,
        grad_norm: float,
        tokens: float,
        seconds: float,
        log_now: bool,
    ) -> None:
        """Record one update; every `log_every` updates write averages (loss per token, tokens/s)."""
        if not self.enabled:
            return
        self._total_tokens += tokens
        self._total_seconds += seconds
        self._loss += loss * tokens
        self._nll += nll * tokens
        self._tokens += tokens
        self._updates += 1
        if self.bar is not None:
            self.bar.update(1)
        if not log_now:
            return
        elapsed = max(time.perf_counter() - self._window_start, 1e-9)
        mean_loss, mean_nll = self._loss / max(self._tokens, 1), self._nll / max(self._tokens, 1)
        tokens_per_second = self._tokens / elapsed
        ppl = math.exp(min(mean_nll, 100.0))
        scalars = {
            "train/loss": mean_loss,
            "train/nll": mean_nll,
            "train/ppl": ppl,
            "train/lr": lr,
            "train/grad_norm": grad_norm,
            "train/tokens_per_second": tokens_per_second,
        }
        self._write_scalars(step, scalars)
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{mean_loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{tokens_per_second:,.0f}")
        else:
            shown_ppl = f" | ppl {ppl:.1f}" if self.perplexity else ""
            log.info("update %d | loss %.3f%s | lr %.2e | grad norm %.2f | %.0f %s/s", step, mean_loss,
                     shown_ppl, lr, grad_norm, tokens_per_second, self.units)  # fmt: skip
        self._reset_window()

    def validation(self, step: int, metrics: dict[str, Any], *, best_bleu: float | None) -> None:
        if not self.enabled:
            return
        numbers = {f"valid/{k}": float(v) for k, v in metrics.items() if isinstance(v, (int, float))}
        self._write_scalars(step, numbers)
        parts = [f"{k.split('/')[1]} {v:.2f}" for k, v in numbers.items()]
        message = f"validation at update {step}: " + " | ".join(parts)
        if best_bleu is not None:
            message += f" | best bleu {best_bleu:.2f}"
        self._print(message)
        if metrics.get("signature"):
            self._print(f"  sacrebleu: {metrics['signature']}")
        samples = metrics.get("samples") or []
        for sample in samples:
            self._print(f"  src: {sample['src']}\n  ref: {sample['ref']}\n  hyp: {sample['hyp']}")
        if self.writer is not None:
            if samples:
                text = "\n\n".join(
                    f"**src** {s['src']}  \n**ref** {s['ref']}  \n**hyp** {s['hyp']}" for s in samples
                )
                self.writer.add_text("valid/samples", text, step)
            if metrics.get("attention_figure") is not None:
                self.writer.add_figure("valid/cross_attention", metrics["attention_figure"], step)
            self.writer.flush()

    def _write_scalars(self, step: int, scalars: dict[str, float]) -> None:
        if self.writer is not None:
            for name, value in scalars.items():
                self.writer.add_scalar(name, value, step)

    def _print(self, message: str) -> None:
        log.info(message)  # routed around the progress bar by logging_redirect_tqdm

    def close(self) -> None:
        if self.bar is not None:
            self._redirect.__exit__(None, None, None)
            self.bar.close()
            self.bar = None
        if self.writer is not None:
            self.writer.close()
