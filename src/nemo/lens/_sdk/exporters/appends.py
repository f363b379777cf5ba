"""Appends that land whole or not at all, to the file that is still at its path.

What :class:`~nemo.lens._sdk.exporters.jsonl.FileSink` does when the file system
fails it in the middle of a run:

* a write the file system refuses part of (full, read-only, an I/O error) is
  **taken back**: :func:`take_back` cuts the file back to where the call's
  first piece began (``ftruncate``), so that a reader never finds half a line
  and the exporter's count of what was lost is exact. It does so only when the
  file still ends where the call's last write ended, so that it never cuts
  into what another process appended since (a forked worker shares the
  descriptor);
* a path that no longer names the open file (:func:`names_file`: the file or its
  directory removed, the file moved away by log rotation) is a cue to open the
  path again, as :class:`logging.handlers.WatchedFileHandler` does, rather than
  go on writing to a file nobody can reach.
"""

from __future__ import annotations

import os
from typing import Final

__all__ = ["Landed", "identity", "names_file", "take_back"]

_UNKNOWN: Final = -1


class Landed:
    """Where one call's pieces landed in the file: from :attr:`start` to :attr:`end`."""

    __slots__ = ("end", "start")

    def __init__(self) -> None:
        self.start = self.end = _UNKNOWN

    def add(self, fd: int, size: int) -> None:
        """A piece of *size* bytes was just written whole through *fd* (``O_APPEND``)."""
        try:
            end = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: the end of that write
        except OSError:  # not a seekable file: nothing can be taken back
            self.start = self.end = _UNKNOWN
            return
        if self.end != end - size:
            # The first piece, or another writer came in between: only what
            # follows is this call's to take back.
            self.start = end - size
        self.end = end


def take_back(fd: int, done: int, landed: Landed | None) -> bool:
    """Cut off what a failed call wrote: its earlier pieces (*landed*) and the *done*
    bytes of the piece that failed. Returns ``False`` when some of it is still
    there, cut short (the file cannot be truncated, or is not seekable): the caller
    then ends that broken line before writing again."""
    try:
        here = os.lseek(fd, 0, os.SEEK_CUR)
        start = here - done
        if landed is not None and landed.end == start and landed.start != _UNKNOWN:
            start = landed.start
        if start >= here:
            return True  # nothing of the call reached the file
        if os.fstat(fd).st_size != here:
            return True  # another process appended after it: not ours to cut
        os.ftruncate(fd, start)
    except OSError:
        return done == 0
    return True


def identity(status: os.stat_result) -> tuple[int, int]:
    """What tells two files apart: device and inode."""
    return status.st_dev, status.st_ino


def names_file(path: str, file: tuple[int, int]) -> bool | None:
    """Whether *path* still names the file of :func:`identity` *file*; ``None`` when
    that cannot be told (a directory on the way may not be searched)."""
    try:
        return identity(os.stat(path)) == file
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return None
