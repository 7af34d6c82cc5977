"""Run position-wise layers on a padded batch's real tokens only.

Linear layers, layer norms and the FFN cost the same for a padding position as for a real token.
A batch whose sentences differ in length (the decoding benchmark's random batch of Bible test
verses is 49% padding) wastes that share of the encoder's work. `Packing` gathers the real tokens
into (N, D) rows for those layers; attention, which needs the (B, H, T, Dh) layout, unpacks its
fused projections, attends and packs the result again.

Packing is used on CPU only: finding the real tokens reads the mask on the host, which on an
accelerator would wait for the device once per forward (not measured there).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

MIN_PADDING_FRACTION = 0.05  # below this, the gathers and scatters cost more than the rows saved


@dataclass(frozen=True)
class Packing:
    """Where the real tokens of a padded (B, T) batch sit. rows: (N,) flat positions b * T + t."""

    rows: Tensor
    batch: int
    length: int

    @classmethod
    def of(cls, keep: Tensor) -> Packing | None:
        """The packing of `keep` (B, T) True = real token, or None where packing would not pay."""
        if keep.device.type != "cpu" or keep.numel() == 0:
            return None
        rows = keep.reshape(-1).nonzero().squeeze(1)  # (N,)
        if rows.numel() > (1 - MIN_PADDING_FRACTION) * keep.numel():
            return None
        return cls(rows, *keep.shape)

    def pack(self, x: Tensor) -> Tensor:
        """The real tokens' rows. Shapes: (B, T, ...) -> (N, ...)."""
        return x.reshape(self.batch * self.length, *x.shape[2:]).index_select(0, self.rows)

    def unpack(self, x: Tensor) -> Tensor:
        """Back to the padded layout, zeros at padding. Shapes: (N, ...) -> (B, T, ...)."""
        padded = x.new_zeros(self.batch * self.length, *x.shape[1:])  # (B * T, ...)
        return padded.index_copy_(0, self.rows, x).view(self.batch, self.length, *x.shape[1:])


__all__ = ["MIN_PADDING_FRACTION", "Packing"]
