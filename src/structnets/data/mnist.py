"""Reader for the IDX files of MNIST (LeCun, Cortes and Burges, 1998).

IDX layout: a big-endian header, ``uint32`` magic (``0x00000803`` = 2051 for a 3-D ``uint8``
image array, ``0x00000801`` = 2049 for a 1-D ``uint8`` label array) then one ``uint32`` size per
dimension, followed by the ``uint8`` data in row-major order.
"""

from __future__ import annotations

import struct

import numpy as np

from .files import DataFileError

IMAGES_MAGIC = 2051
LABELS_MAGIC = 2049
_NDIM = {IMAGES_MAGIC: 3, LABELS_MAGIC: 1}


def read_idx(content: bytes, filename: str, *, magic: int) -> np.ndarray:
    """Parse an uncompressed IDX ``uint8`` array and check its header against its length.

    Args:
        content: the file's bytes (already decompressed).
        filename: the file's name, used in error messages.
        magic: the expected magic number, :data:`IMAGES_MAGIC` (3-D) or :data:`LABELS_MAGIC` (1-D).

    Returns:
        a read-only ``uint8`` array of shape ``(n, rows, cols)`` for images or ``(n,)`` for labels.

    Raises:
        DataFileError: the header is short, the magic is wrong, or the data is not exactly
            ``prod(dims)`` bytes (a truncated or padded file).
    """
    if magic not in _NDIM:
        raise ValueError(f"`magic` must be one of {sorted(_NDIM)}, got {magic}")
    ndim = _NDIM[magic]
    header_size = 4 * (1 + ndim)
    if len(content) < header_size:
        raise DataFileError(
            f"IDX file {filename!r} is truncated: {len(content)} bytes, shorter than its {header_size}-byte header",
            filename=filename,
        )
    found = struct.unpack(">I", content[:4])[0]
    if found != magic:
        raise DataFileError(f"IDX file {filename!r} has magic number {found}, expected {magic}", filename=filename)
    dims = struct.unpack(f">{ndim}I", content[4:header_size])
    expected = int(np.prod(dims, dtype=np.int64))
    available = len(content) - header_size
    if available != expected:
        problem = "truncated" if available < expected else "too long"
        raise DataFileError(
            f"IDX file {filename!r} is {problem}: its header {dims} needs {expected} data bytes, it has {available}",
            filename=filename,
        )
    return np.frombuffer(content, dtype=np.uint8, offset=header_size).reshape(dims)


def read_images_and_labels(
    images: bytes, labels: bytes, images_name: str, labels_name: str
) -> tuple[np.ndarray, np.ndarray]:
    """Parse an image file and its label file and check that they pair up.

    Args:
        images, labels: decompressed IDX contents.
        images_name, labels_name: file names for messages.

    Returns:
        ``(pixels, digits)``: ``uint8`` of shape ``(n, 28, 28)`` and ``uint8`` of shape ``(n,)``
        with values in 0..9.

    Raises:
        DataFileError: a malformed file, counts that differ, images not 28×28, or a label > 9.
    """
    pixels = read_idx(images, images_name, magic=IMAGES_MAGIC)
    digits = read_idx(labels, labels_name, magic=LABELS_MAGIC)
    if pixels.shape[1:] != (28, 28):
        raise DataFileError(
            f"IDX file {images_name!r} holds images of {pixels.shape[1:]}, expected (28, 28)",
            filename=images_name,
        )
    if pixels.shape[0] != digits.shape[0]:
        raise DataFileError(
            f"IDX files {images_name!r} ({pixels.shape[0]} images) and {labels_name!r} "
            f"({digits.shape[0]} labels) do not pair up",
            filename=labels_name,
        )
    if digits.size and digits.max() > 9:
        raise DataFileError(
            f"IDX file {labels_name!r} has label {int(digits.max())}, expected digits 0..9",
            filename=labels_name,
        )
    return pixels, digits
