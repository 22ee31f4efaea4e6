"""Simple-8b words as MongoDB's BSONColumn writes them (pure; no I/O, no server imports).

A word is a little-endian uint64 whose low 4 bits are the *selector*:

- 1..14 (base): equal slots of 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 30 or 60 bits from bit 4 up,
  60 / width values (60, 30, 20, 15, 12, 10, 8, 7, 6, 5, 4, 3, 2, 1). Selectors 7 and 8 leave 4 bits
  spare, used as an *extension nibble* in bits 4-7: 0 keeps the base layout (values then start at bit
  8), otherwise the slots carry a value and a trailing-zero count (below);
- 7 with extension 1..9: slots of value bits 2, 3, 4, 5, 7, 10, 14, 24, 52 plus a 4-bit count of
  trailing zero *bits*;
- 8 with extension 1..7: value bits 4, 5, 7, 10, 14, 24, 52 plus a 4-bit count of trailing zero
  *nibbles*; with extension 8..13: value bits 4, 6, 9, 13, 23, 51 plus a 5-bit nibble count;
- 15 (RLE): ((bits 4-7) + 1) * 120 repeats of the value before it (the last value of the previous
  word, or the value the run was started with when it is the first word).

In every layout a slot of all one bits is a *skip* (a missing value, ``None`` here); a value slot
decodes to ``(slot >> count_bits) << (count * (1 or 4))``. Selector 0 and unused extensions are
invalid. The values themselves are unsigned; BSONColumn stores zigzag-encoded deltas in them
(``zigzag_decode``).
"""

from __future__ import annotations

from typing import Any

RLE_SELECTOR = 15
RLE_BLOCK = 120  # values per RLE unit; one RLE word repeats 1..16 units
MAX_RLE_UNITS = 16

# Base selectors: selector -> slot width in bits.
BASE_BITS = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 10, 10: 12, 11: 15, 12: 20, 13: 30, 14: 60}
# Extended selectors: (selector, extension) -> (value bits, count bits, zeros per count unit).
_EXTENDED = {
    **{(7, ext): (bits, 4, 1) for ext, bits in enumerate((2, 3, 4, 5, 7, 10, 14, 24, 52), start=1)},
    **{(8, ext): (bits, 4, 4) for ext, bits in enumerate((4, 5, 7, 10, 14, 24, 52), start=1)},
    **{(8, ext): (bits, 5, 4) for ext, bits in enumerate((4, 6, 9, 13, 23, 51), start=8)},
}

MASK64 = (1 << 64) - 1
MASK128 = (1 << 128) - 1


class Simple8bError(ValueError):
    """A word that no valid Simple-8b stream contains."""


def _layouts() -> list[Any]:
    """Decoding layout per low byte of a word: None (invalid), "rle", or
    (slot shifts, slot mask, count bits, zeros per count unit)."""
    table: list[Any] = [None] * 256
    for low in range(256):
        selector, ext = low & 0xF, low >> 4
        if selector == RLE_SELECTOR:
            table[low] = "rle"
        elif selector in (7, 8) and ext:
            if (selector, ext) in _EXTENDED:
                value_bits, count_bits, unit = _EXTENDED[selector, ext]
                slot = value_bits + count_bits
                table[low] = (tuple(range(8, 64 - slot + 1, slot)), (1 << slot) - 1, count_bits, unit)
        elif selector in BASE_BITS:
            width = BASE_BITS[selector]
            start = 8 if selector in (7, 8) else 4
            table[low] = (tuple(range(start, 64 - width + 1, width)), (1 << width) - 1, 0, 0)
    return table


_LAYOUTS = _layouts()


def decode_words(words: list[int], previous: int | None, wide: bool) -> list[int | None]:
    """The values of consecutive ``words`` (at least one value per word, so the last one is what an
    RLE word after them would repeat). ``previous`` is what an RLE word repeats before any value was
    decoded; ``wide`` selects 128-bit values (else a value beyond 64 bits is invalid)."""
    out: list[int | None] = []
    append, extend = out.append, out.extend
    last = previous
    for word in words:
        layout = _LAYOUTS[word & 0xFF]
        if layout is None:
            raise Simple8bError(f"invalid Simple-8b selector {word & 0xF} (extension {(word >> 4) & 0xF})")
        if layout == "rle":
            extend([last] * ((((word >> 4) & 0xF) + 1) * RLE_BLOCK))
            continue
        shifts, mask, count_bits, unit = layout
        if not count_bits:
            values = [(word >> shift) & mask for shift in shifts]
            if mask in values:
                values = [None if v == mask else v for v in values]
            extend(values)
            last = values[-1]
            continue
        count_mask = (1 << count_bits) - 1
        for shift in shifts:
            slot = (word >> shift) & mask
            if slot == mask:
                last = None
            else:
                zeros = (slot & count_mask) * unit
                if not wide and zeros >= 64:
                    raise Simple8bError(f"Simple-8b value shifted by {zeros} bits does not fit 64 bits")
                last = ((slot >> count_bits) << zeros) & (MASK128 if wide else MASK64)
            append(last)
    return out


def values_in_word(word: int) -> int:
    """How many values (skips included) a valid word decodes to."""
    layout = _LAYOUTS[word & 0xFF]
    if layout is None:
        raise Simple8bError(f"invalid Simple-8b selector {word & 0xF} (extension {(word >> 4) & 0xF})")
    return (((word >> 4) & 0xF) + 1) * RLE_BLOCK if layout == "rle" else len(layout[0])


def zigzag_decode(value: int) -> int:
    """Unsigned zigzag form -> signed delta (0, -1, 1, -2, ... <- 0, 1, 2, 3, ...)."""
    return (value >> 1) ^ -(value & 1)


def zigzag_encode(delta: int, bits: int = 64) -> int:
    """A delta modulo 2**bits (signed or not) -> unsigned zigzag form of its signed value."""
    mask = (1 << bits) - 1
    delta &= mask
    if delta >> (bits - 1):
        delta -= 1 << bits
    return ((delta << 1) ^ (delta >> (bits - 1))) & mask


# -- encoding (used by bsoncolumn_encode) --------------------------------------------------------

# Base selectors ordered from most to fewest values per word: (selector, values, width, first bit).
_PACK_ORDER = sorted(
    ((sel, len(range(8 if sel in (7, 8) else 4, 64 - w + 1, w)), w, 8 if sel in (7, 8) else 4)
     for sel, w in BASE_BITS.items()),
    key=lambda entry: -entry[1],
)
MAX_VALUE = (1 << 60) - 2  # the largest value a word can hold (all ones in a 60-bit slot is a skip)


def encode_words(values: list[int | None], previous: int | None) -> list[int]:
    """Pack ``values`` (each None or 0..MAX_VALUE) into words using base selectors and RLE.

    Every word is full (a decoder yields all of its slots), so the words decode to exactly
    ``values``. ``previous`` is what the decoder's RLE would repeat before the first word."""
    words: list[int] = []
    n = len(values)
    i = 0
    last = previous
    while i < n:
        run = 0
        while i + run < n and values[i + run] == last:
            run += 1
        units = min(run // RLE_BLOCK, MAX_RLE_UNITS)
        if units:
            words.append(RLE_SELECTOR | ((units - 1) << 4))
            i += units * RLE_BLOCK
            continue
        for selector, count, width, first in _PACK_ORDER:
            if count > n - i:
                continue
            chunk = values[i:i + count]
            skip = (1 << width) - 1
            if any(v is not None and v >= skip for v in chunk):
                continue
            word = selector
            for k, v in enumerate(chunk):
                word |= (skip if v is None else v) << (first + k * width)
            words.append(word)
            last = chunk[-1]
            i += count
            break
        else:  # pragma: no cover - a single 60-bit slot holds any value up to MAX_VALUE
            raise Simple8bError(f"value {values[i]} does not fit a Simple-8b word")
    return words
