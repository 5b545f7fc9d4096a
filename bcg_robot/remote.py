"""The Unitree wireless remote as packed into ``LowState_.wireless_remote[40]``.

Bytes 2..3: little-endian uint16 button mask; sticks are little-endian float32 at
lx [4:8], rx [8:12], ry [12:16], ly [20:24]. Bit order of the mask: :data:`BUTTON_BITS`
(R1 bit 0, L1 1, start 2, select 3, R2 4, L2 5, F1 6, F2 7, A 8, B 9, X 10, Y 11, up 12,
right 13, down 14, left 15).
"""

from __future__ import annotations

import dataclasses
import struct

BUTTON_BITS = {
    "R1": 0, "L1": 1, "start": 2, "select": 3, "R2": 4, "L2": 5, "F1": 6, "F2": 7,
    "A": 8, "B": 9, "X": 10, "Y": 11, "up": 12, "right": 13, "down": 14, "left": 15,
}
REMOTE_BYTES = 40


@dataclasses.dataclass(frozen=True)
class RemoteState:
    buttons: frozenset[str] = frozenset()
    lx: float = 0.0
    rx: float = 0.0
    ry: float = 0.0
    ly: float = 0.0

    def pressed(self, *names: str) -> bool:
        return all(n in self.buttons for n in names)


def buttons_from_mask(mask: int) -> frozenset[str]:
    """The buttons a mask holds (bits beyond :data:`BUTTON_BITS` ignored)."""
    return frozenset(name for name, bit in BUTTON_BITS.items() if mask >> bit & 1)


def button_mask(buttons) -> int:
    """The mask of ``buttons`` (names of :data:`BUTTON_BITS`; an unknown one is a ValueError)."""
    unknown = set(buttons) - set(BUTTON_BITS)
    if unknown:
        raise ValueError(f"unknown remote button {sorted(unknown)[0]}")
    return sum(1 << BUTTON_BITS[b] for b in set(buttons))


def decode_remote(raw) -> RemoteState:
    data = bytes(bytearray(int(b) & 0xFF for b in raw))
    if len(data) < REMOTE_BYTES:
        raise ValueError(f"wireless_remote has {len(data)} bytes, expected {REMOTE_BYTES}")
    (mask,) = struct.unpack_from("<H", data, 2)
    buttons = buttons_from_mask(mask)
    lx, rx, ry = struct.unpack_from("<3f", data, 4)
    (ly,) = struct.unpack_from("<f", data, 20)
    return RemoteState(buttons, lx, rx, ry, ly)


def encode_remote(state: RemoteState) -> list[int]:
    mask = button_mask(state.buttons)
    data = bytearray(REMOTE_BYTES)
    struct.pack_into("<H", data, 2, mask)
    struct.pack_into("<3f", data, 4, state.lx, state.rx, state.ry)
    struct.pack_into("<f", data, 20, state.ly)
    return list(data)
