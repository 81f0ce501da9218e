"""``load`` and ``names``: locate, verify, parse and cache the data sets."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import files
from .dataset import Dataset, Parsed
from .files import PathArg

_TRAIN, _TEST = 60000, 10000


def names() -> list[str]:
    """Return the names :func:`load` accepts, in a fixed order (the eight UCI sets, then MNIST)."""
    return list(files.FILES)


def load(name: str, data_dir: PathArg | None = None, *, download: bool = True) -> Dataset:
    """Load a data set by name, verified against its pinned content digests.

    Files are looked for in ``data_dir``, then ``$STRUCTNETS_DATA``, then ``~/.cache/structnets``,
    and otherwise downloaded into the cache (see :mod:`structnets.data.files`). Parsed arrays are
    cached per process, keyed on the files' paths, sizes and modification times; each call
    returns fresh writable copies, so callers cannot corrupt the cache.

    Args:
        name: one of :func:`names`.
        data_dir: a folder to search first; it must exist.
        download: whether a file found nowhere may be downloaded from the official archive.

    Returns:
        a :class:`Dataset`: float64 features (one-hot encoded, NOT standardised), int64 class
        indices or float64 targets min-max scaled to [0, 1], and a description of the
        preprocessing. For ``"mnist"``: 70000 × 784 pixels scaled to [0, 1], the 60000 official
        training images first, and ``split`` marking rows ``"train"``/``"test"``.

    Raises:
        ValueError: an unknown name (the message lists the valid ones), or a ``data_dir`` /
            ``STRUCTNETS_DATA`` that is not a folder.
        TypeError: ``name`` is not a str, or ``download`` is not a bool.
        DataFileError: a file is missing and cannot be downloaded, cannot be read (e.g. a
            truncated gzip), or does not match its pinned digest (the message names the file and
            gives both digests).
    """
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a str, one of {names()}, got {name!r} ({type(name).__name__})")
    if name not in files.FILES:
        raise ValueError(f"`name` must be one of {names()}, got {name!r}")
    if not isinstance(download, bool):  # "False" is truthy: never guess what a string means
        raise TypeError(f"`download` must be a bool, got {download!r} ({type(download).__name__})")
    paths = files.resolve(name, data_dir, download=download)
    key = tuple(_stat_key(path) for path in paths)
    parsed = _parse(name, key)
    X = parsed.X.astype(np.float64)  # always a copy
    if parsed.x_divisor is not None:
        X /= parsed.x_divisor
    return Dataset(
        name=name,
        X=X,
        y=parsed.y.copy(),
        task=parsed.task,
        feature_names=list(parsed.feature_names),
        classes=None if parsed.classes is None else list(parsed.classes),
        target_range=parsed.target_range,
        description=parsed.description,
        split=None if parsed.split is None else parsed.split.copy(),
    )


def _stat_key(path: Path) -> tuple[str, int, int, int, int]:
    # size, mtime, inode and ctime: a same-size edit with its mtime put back still gets a new key
    return files._stat_key(path)


@functools.lru_cache(maxsize=16)
def _parse(name: str, key: tuple[tuple[str, int, int, int, int], ...]) -> Parsed:
    specs = files.FILES[name]
    contents = [files.read_verified(spec, Path(entry[0])) for spec, entry in zip(specs, key, strict=True)]
    if name == "mnist":
        return _mnist(contents, [spec.filename for spec in specs])
    from . import uci  # pandas is imported only when a UCI set is loaded

    return uci.PARSERS[name](contents)


def _mnist(contents: Sequence[bytes], filenames: Sequence[str]) -> Parsed:
    from .mnist import read_images_and_labels

    train_x, train_y = read_images_and_labels(contents[0], contents[1], filenames[0], filenames[1])
    test_x, test_y = read_images_and_labels(contents[2], contents[3], filenames[2], filenames[3])
    pixels = np.concatenate([train_x, test_x]).reshape(-1, 28 * 28)
    digits = np.concatenate([train_y, test_y]).astype(np.int64)
    split = np.array(["train"] * train_x.shape[0] + ["test"] * test_x.shape[0])
    for array in (pixels, digits, split):
        array.setflags(write=False)
    description = (
        f"MNIST (LeCun, Cortes and Burges): the {train_x.shape[0]} official training images then "
        f"the {test_x.shape[0]} test images (t10k), each 28x28 flattened row-major to 784 "
        f"features 'pixel_<row>_<col>' and scaled from 0..255 to [0, 1] (divided by 255); "
        f"`split` marks each row 'train' or 'test'. Labels are the digits 0..9. Features are "
        f"not standardised."
    )
    return Parsed(
        X=pixels,
        y=digits,
        task="classification",
        feature_names=tuple(f"pixel_{r}_{c}" for r in range(28) for c in range(28)),
        classes=tuple(str(d) for d in range(10)),
        target_range=None,
        description=description,
        split=split,
        x_divisor=255.0,
    )
