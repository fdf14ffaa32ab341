"""The blob store: every blob of the catalog, one compact JSON line each, in one file.

The file is, byte for byte, catalogd's ``/api/v1/all`` body; the index keeps only where
each blob sits (:class:`BlobRef`) and reads a blob back when a request needs it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO


@dataclass(slots=True)
class BlobRef:
    """One blob's meta keys and its line in the blob store (offset, length incl. newline)."""

    schema: str
    package: str
    name: str
    offset: int
    length: int


class BlobStore:
    """Append-only file of compact JSON lines, read back with positional reads.

    ``os.pread`` needs no seek, so request threads share one descriptor without a lock.
    Without a path the file is anonymous (unlinked at creation, gone when closed).
    """

    def __init__(self, file: BinaryIO, size: int) -> None:
        self._file = file
        self.size = size

    @classmethod
    def create(cls, path: Path | None = None) -> BlobStore:
        # The store outlives this call: close() closes the file.
        file = path.open("w+b") if path is not None else tempfile.TemporaryFile("w+b")  # noqa: SIM115
        return cls(file, 0)

    @classmethod
    def open(cls, path: Path) -> BlobStore:
        file = path.open("rb")
        return cls(file, os.fstat(file.fileno()).st_size)

    def append(self, data: bytes) -> int:
        offset = self.size
        self._file.write(data)
        self.size += len(data)
        return offset

    def seal(self) -> None:
        """Make appended data visible to :meth:`read` (it bypasses the write buffer)."""
        self._file.flush()

    def read(self, offset: int, length: int) -> bytes:
        data = os.pread(self._file.fileno(), length, offset)
        while len(data) < length:  # short reads only happen on exotic filesystems
            more = os.pread(self._file.fileno(), length - len(data), offset + len(data))
            if not more:
                raise OSError(f"blob store truncated at {offset + len(data)}")
            data += more
        return data

    def chunks(self, refs: Iterable[BlobRef] | None = None, size: int = 1 << 20) -> Iterator[bytes]:
        """The whole store (``refs`` None) or the given blobs, in pieces of about ``size``."""
        if refs is None:
            for offset in range(0, self.size, size):
                yield self.read(offset, min(size, self.size - offset))
            return
        pending: list[bytes] = []
        pending_size = 0
        for ref in refs:
            pending.append(self.read(ref.offset, ref.length))
            pending_size += ref.length
            if pending_size >= size:
                yield b"".join(pending)
                pending, pending_size = [], 0
        if pending:
            yield b"".join(pending)

    def close(self) -> None:
        self._file.close()
