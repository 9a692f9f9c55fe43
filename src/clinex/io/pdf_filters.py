"""Bytes a PDF stream's filter chain decodes to, counted in bounded memory.

A PDF stream names its filters as one name or an array, applied in order
(ISO 32000-1:2008, 7.3.8.2 and 7.4): ``/Filter [/ASCII85Decode /FlateDecode]``
first decodes ASCII85, then inflates the result. PDFium decodes each stage into a
new buffer, so a stream doubly deflated (``[/FlateDecode /FlateDecode]``) of 2.5 KB
takes gigabytes of memory when PDFium reads it (issue 21), though its first stage
inflates to 2 MB only. :func:`decoded_size` runs the whole chain piece by piece
(at most :data:`CHUNK` bytes of each stage's output at a time, nothing kept) and
counts the output of *every* stage, stopping as soon as the count passes the
caller's limit; the memory of a count is about ``CHUNK`` per stage, whatever the
stream inflates to.

Decoded here (ISO 32000-1, 7.4.2-7.4.6): ``FlateDecode``, ``LZWDecode`` (with
``/EarlyChange``), ``ASCIIHexDecode``, ``ASCII85Decode``, ``RunLengthDecode``
(short names ``Fl``, ``LZW``, ``AHx``, ``A85``, ``RL`` too), with ``/DecodeParms``
predictors (TIFF 2, PNG 10-15, 7.4.4.4) applied where another filter follows
(the last stage's predictor only drops a byte a row, and is not run). Image
filters (``DCTDecode``, ``JPXDecode``, ``JBIG2Decode``, ``CCITTFaxDecode``),
``Crypt`` and unknown names end the chain: text extraction never decodes them.
Corrupt data ends a stage where it breaks, as PDFium stops there too.
"""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Iterator, Mapping, Sequence

__all__ = ["CHUNK", "FILTER_NAMES", "decoded_size", "looks_deflated"]

#: Bytes of one stage's output handled at a time.
CHUNK = 1 << 18

#: Filter names decoded here, full and abbreviated (ISO 32000-1, tables 6 and 94).
FILTER_NAMES = {
    "FlateDecode": "FlateDecode", "Fl": "FlateDecode",
    "LZWDecode": "LZWDecode", "LZW": "LZWDecode",
    "ASCIIHexDecode": "ASCIIHexDecode", "AHx": "ASCIIHexDecode",
    "ASCII85Decode": "ASCII85Decode", "A85": "ASCII85Decode",
    "RunLengthDecode": "RunLengthDecode", "RL": "RunLengthDecode",
}

_WHITESPACE = b"\x00\t\n\x0c\r "
_NOT_HEX = re.compile(rb"[^0-9A-Fa-f]")


class _Over(Exception):
    """The count passed the limit."""


def looks_deflated(head: bytes) -> bool:
    """Whether ``head`` starts with a zlib header (RFC 1950, 2.2: method 8, check bits, no preset dictionary)."""
    return (len(head) >= 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7
            and (head[0] * 256 + head[1]) % 31 == 0 and not head[1] & 0x20)


class _Stage:
    """One filter: ``feed`` input pieces, get output pieces; ``done`` once its data ended."""

    done = False

    def feed(self, data: bytes) -> Iterator[bytes]:  # pragma: no cover - interface
        raise NotImplementedError

    def flush(self) -> Iterator[bytes]:
        return iter(())


class _Flate(_Stage):
    def __init__(self) -> None:
        self.z = zlib.decompressobj()

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self.done:
            return
        z = self.z
        try:
            out = z.decompress(data, CHUNK)
            yield out
            while z.unconsumed_tail and not z.eof:
                out = z.decompress(z.unconsumed_tail, CHUNK)
                yield out
        except zlib.error:
            self.done = True
            return
        if z.eof:
            self.done = True

    @property
    def unused(self) -> int:
        """Input bytes fed after the end of the zlib stream."""
        return len(self.z.unused_data) + len(self.z.unconsumed_tail)


class _Sniff(_Stage):
    """Filters not known (an unreadable dictionary): inflate while the data looks deflated.

    The first bytes decide: a zlib header makes this stage a Flate stage whose
    output goes to another sniffing stage (up to ``depth`` stages), anything else
    ends the chain (no output)."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.pending = b""
        self.inner: _Flate | None = None
        self.next: _Sniff | None = None

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self.done:
            return
        if self.inner is None:
            self.pending += data
            if len(self.pending) < 2:
                return
            if not looks_deflated(self.pending[:2]):
                self.done = True
                return
            self.inner = _Flate()
            data, self.pending = self.pending, b""
        for out in self.inner.feed(data):
            yield out
            if self.next is None and self.depth > 1:
                self.next = _Sniff(self.depth - 1)
            if self.next is not None and out:
                yield from self.next.feed(out)
        self.done = self.inner.done


class _LZW(_Stage):
    """LZW (ISO 32000-1, 7.4.4.2): 9-12-bit codes, 256 clear table, 257 end."""

    def __init__(self, early: int) -> None:
        self.early = 1 if early else 0
        self.bits = 0
        self.nbits = 0
        self._reset()
        self.prev: bytes | None = None

    def _reset(self) -> None:
        self.table: list[bytes] = [bytes((i,)) for i in range(256)] + [b"", b""]
        self.width = 9

    def feed(self, data: bytes) -> Iterator[bytes]:
        out = bytearray()
        table = self.table
        for byte in data:
            if self.done:
                break
            self.bits = (self.bits << 8) | byte
            self.nbits += 8
            while self.nbits >= self.width:
                self.nbits -= self.width
                code = (self.bits >> self.nbits) & ((1 << self.width) - 1)
                self.bits &= (1 << self.nbits) - 1
                if code == 256:
                    self._reset()
                    table = self.table
                    self.prev = None
                    continue
                if code == 257:
                    self.done = True
                    break
                if code < len(table):
                    entry = table[code]
                    if self.prev is not None:
                        table.append(self.prev + entry[:1])
                elif code == len(table) and self.prev is not None:
                    entry = self.prev + self.prev[:1]
                    table.append(entry)
                else:  # a code not in the table: corrupt data ends here
                    self.done = True
                    break
                out += entry
                self.prev = entry
                n = len(table) + self.early
                if n >= 2048:
                    self.width = 12
                elif n >= 1024:
                    self.width = 11
                elif n >= 512:
                    self.width = 10
                if len(out) >= CHUNK:
                    yield bytes(out)
                    out.clear()
                if len(table) > 4096:  # full table and no clear code: corrupt
                    self.done = True
                    break
        if out:
            yield bytes(out)


class _AHx(_Stage):
    """ASCII hexadecimal (7.4.2): whitespace skipped, ``>`` ends the data."""

    def __init__(self) -> None:
        self.odd = b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self.done:
            return
        end = data.find(b">")
        if end >= 0:
            data, self.done = data[:end], True
        digits = self.odd + _NOT_HEX.sub(b"", data)
        cut = len(digits) - len(digits) % 2
        self.odd = digits[cut:]
        if cut:
            yield bytes.fromhex(digits[:cut].decode("ascii"))

    def flush(self) -> Iterator[bytes]:
        if self.odd:  # a final odd digit is followed by 0
            yield bytes.fromhex(self.odd.decode("ascii") + "0")
            self.odd = b""


class _A85(_Stage):
    """ASCII base-85 (7.4.3): whitespace skipped, ``z`` four zero bytes, ``~>`` ends the data."""

    def __init__(self) -> None:
        self.rest = b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self.done:
            return
        end = data.find(b"~")
        if end >= 0:
            data, self.done = data[:end], True
        data = self.rest + data.translate(None, _WHITESPACE).replace(b"z", b"!!!!!")
        cut = len(data) - len(data) % 5
        self.rest = data[cut:]
        if cut:
            try:
                yield base64.a85decode(data[:cut])
            except ValueError:  # a character outside ! to u: corrupt data ends here
                self.done, self.rest = True, b""

    def flush(self) -> Iterator[bytes]:
        if len(self.rest) > 1:
            try:
                yield base64.a85decode(self.rest)
            except ValueError:
                pass
        self.rest = b""


class _RunLength(_Stage):
    """Run-length (7.4.5): length byte 0-127 copies n+1 bytes, 129-255 repeats one 257-n times, 128 ends."""

    def __init__(self) -> None:
        self.rest = b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self.done:
            return
        data = self.rest + data
        out = bytearray()
        i, n = 0, len(data)
        while i < n:
            length = data[i]
            if length == 128:
                self.done = True
                break
            if length < 128:
                if i + 1 + length + 1 > n:
                    break
                out += data[i + 1:i + 2 + length]
                i += 2 + length
            else:
                if i + 1 >= n:
                    break
                out += data[i + 1:i + 2] * (257 - length)
                i += 2
            if len(out) >= CHUNK:
                yield bytes(out)
                out.clear()
        self.rest = b"" if self.done else data[i:]
        if out:
            yield bytes(out)


class _Predictor(_Stage):
    """TIFF predictor 2 and PNG predictors 10-15 (7.4.4.4), row by row, 8 bits per component."""

    def __init__(self, predictor: int, colors: int, columns: int, bits: int) -> None:
        self.png = predictor >= 10
        self.bpp = max(1, colors * bits // 8)
        self.row = (colors * bits * columns + 7) // 8
        self.prior = bytes(self.row)
        self.rest = b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        import numpy as np

        data = self.rest + data
        step = self.row + (1 if self.png else 0)
        n_rows = len(data) // step
        self.rest = data[n_rows * step:]
        out = bytearray()
        bpp = self.bpp
        prior = np.frombuffer(self.prior, dtype=np.uint8)
        for k in range(n_rows):
            line = data[k * step:(k + 1) * step]
            kind = line[0] if self.png else 1
            cur = np.frombuffer(line[1:] if self.png else line, dtype=np.uint8)
            if kind == 0:
                raw = cur
            elif kind == 1:  # Sub: running sum along the row, per byte of a pixel
                pad = (-len(cur)) % bpp
                grid = np.concatenate([cur, np.zeros(pad, np.uint8)]).reshape(-1, bpp)
                raw = np.cumsum(grid, axis=0, dtype=np.uint8).reshape(-1)[:len(cur)]
            elif kind == 2:  # Up
                raw = cur + prior
            elif kind in (3, 4):  # Average, Paeth: each byte needs the one left of it
                got = bytearray(len(cur))
                up = prior.tolist()
                for x, value in enumerate(cur.tolist()):
                    left = got[x - bpp] if x >= bpp else 0
                    if kind == 3:
                        got[x] = (value + (left + up[x]) // 2) & 255
                    else:
                        corner = up[x - bpp] if x >= bpp else 0
                        p = left + up[x] - corner
                        pa, pb, pc = abs(p - left), abs(p - up[x]), abs(p - corner)
                        pred = left if pa <= pb and pa <= pc else (up[x] if pb <= pc else corner)
                        got[x] = (value + pred) & 255
                raw = np.frombuffer(bytes(got), dtype=np.uint8)
            else:  # an unknown row filter: PDFium stops decoding
                self.done = True
                break
            prior = raw.astype(np.uint8, copy=False)
            out += prior.tobytes()
            if len(out) >= CHUNK:
                yield bytes(out)
                out.clear()
        self.prior = prior.tobytes()
        if out:
            yield bytes(out)


def _int(parms: Mapping[str, object] | None, key: str, default: int) -> int:
    value = parms.get(key, default) if parms else default
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 20 else default


def _stages(chain: Sequence[tuple[str, Mapping[str, object] | None]]) -> list[_Stage]:
    stages: list[_Stage] = []
    for i, (name, parms) in enumerate(chain):
        kind = FILTER_NAMES.get(name)
        if kind is None:
            break
        if kind == "FlateDecode":
            stages.append(_Flate())
        elif kind == "LZWDecode":
            stages.append(_LZW(_int(parms, "EarlyChange", 1)))
        elif kind == "ASCIIHexDecode":
            stages.append(_AHx())
        elif kind == "ASCII85Decode":
            stages.append(_A85())
        else:
            stages.append(_RunLength())
        predictor = _int(parms, "Predictor", 1)
        last = i == len(chain) - 1 or FILTER_NAMES.get(chain[i + 1][0]) is None
        if kind in ("FlateDecode", "LZWDecode") and predictor > 1 and not last:
            stages.append(_Predictor(predictor, _int(parms, "Colors", 1) or 1,
                                     _int(parms, "Columns", 1) or 1,
                                     _int(parms, "BitsPerComponent", 8) or 8))
    return stages


def decoded_size(data, start: int, end: int, chain: Sequence[tuple[str, Mapping[str, object] | None]] | None,
                 limit: int, *, sniff_depth: int = 8) -> tuple[int, int]:
    """Bytes that the stages of a filter chain produce from ``data[start:end]``, counted up to ``limit + 1``.

    Parameters
    ----------
    data : bytes-like
        The file (or the stream's raw bytes); sliced, never copied whole.
    start, end : int
        The stream's raw data, byte offsets into ``data``.
    chain : sequence of (str, mapping or None), or None
        The filter names in order, each with its ``/DecodeParms`` (``Predictor``,
        ``Colors``, ``Columns``, ``BitsPerComponent``, ``EarlyChange``: int values).
        None when the stream's dictionary could not be read: the data is then
        inflated while it looks deflated, up to ``sniff_depth`` times.
    limit : int
        Count this many bytes at most (then stop, returning more than ``limit``).
    sniff_depth : int, default 8
        Stages tried when ``chain`` is None.

    Returns
    -------
    tuple of (int, int)
        The bytes counted over all stages (the output of each; more than
        ``limit`` when the limit is passed) and where the first stage stopped
        reading when it is a Flate stage whose data ended (else ``start``).
    """
    stages: list[_Stage] = [_Sniff(sniff_depth)] if chain is None else _stages(chain)
    if not stages:
        return 0, start
    total = 0

    def push(i: int, piece: bytes) -> None:
        nonlocal total
        for out in stages[i].feed(piece):
            if not out:
                continue
            total += len(out)
            if total > limit:
                raise _Over
            if i + 1 < len(stages):
                push(i + 1, out)

    pos = start
    try:
        while pos < end and not stages[0].done:
            piece = bytes(data[pos:min(end, pos + CHUNK)])
            pos += len(piece)
            push(0, piece)
        for i, stage in enumerate(stages):
            for out in stage.flush():
                total += len(out)
                if total > limit:
                    raise _Over
                if i + 1 < len(stages):
                    push(i + 1, out)
    except _Over:
        return total, start
    first = stages[0]
    if isinstance(first, _Flate) and first.done and first.z.eof:
        return total, pos - first.unused
    return total, start
