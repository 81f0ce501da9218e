"""MNIST: the IDX reader on synthetic bytes, and one load of the real files."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

import structnets.data as data
from structnets.data import DataFileError
from structnets.data.mnist import IMAGES_MAGIC, LABELS_MAGIC, read_idx, read_images_and_labels


def _idx(magic: int, dims: tuple[int, ...], payload: bytes) -> bytes:
    return struct.pack(f">I{len(dims)}I", magic, *dims) + payload


def test_read_idx_parses_big_endian_header() -> None:
    pixels = np.arange(2 * 28 * 28, dtype=np.uint32).astype(np.uint8).reshape(2, 28, 28)
    array = read_idx(_idx(IMAGES_MAGIC, (2, 28, 28), pixels.tobytes()), "x", magic=IMAGES_MAGIC)
    np.testing.assert_array_equal(array, pixels)
    labels = read_idx(_idx(LABELS_MAGIC, (3,), bytes([7, 0, 9])), "y", magic=LABELS_MAGIC)
    assert labels.tolist() == [7, 0, 9] and labels.dtype == np.uint8


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        (_idx(LABELS_MAGIC, (5,), bytes(4)), r"'f' is truncated.*needs 5 data bytes, it has 4"),
        (_idx(LABELS_MAGIC, (5,), bytes(6)), r"'f' is too long"),
        (_idx(IMAGES_MAGIC, (1, 28, 28), bytes(784)), r"'f' has magic number 2051, expected 2049"),
        (b"\x00\x00\x08", r"'f' is truncated: 3 bytes, shorter than its 8-byte header"),
    ],
)
def test_read_idx_rejects_malformed_files(content: bytes, pattern: str) -> None:
    with pytest.raises(DataFileError, match=pattern) as caught:
        read_idx(content, "f", magic=LABELS_MAGIC)
    assert caught.value.filename == "f"


def test_images_and_labels_must_pair_up() -> None:
    images = _idx(IMAGES_MAGIC, (2, 28, 28), bytes(2 * 784))
    with pytest.raises(DataFileError, match=r"2 images.*3 labels"):
        read_images_and_labels(images, _idx(LABELS_MAGIC, (3,), bytes(3)), "img", "lab")
    with pytest.raises(DataFileError, match=r"'lab' has label 10"):
        read_images_and_labels(images, _idx(LABELS_MAGIC, (2,), bytes([3, 10])), "img", "lab")
    small = _idx(IMAGES_MAGIC, (2, 27, 28), bytes(2 * 27 * 28))
    with pytest.raises(DataFileError, match=r"'img' holds images of \(27, 28\)"):
        read_images_and_labels(small, _idx(LABELS_MAGIC, (2,), bytes(2)), "img", "lab")


def test_mnist_load_shapes_labels_and_split(shared_data: Path) -> None:
    ds = data.load("mnist")
    assert ds.task == "classification" and ds.classes == [str(d) for d in range(10)]
    assert ds.X.shape == (70000, 784) and ds.X.dtype == np.float64
    assert ds.X.min() == 0.0 and ds.X.max() == 1.0
    assert ds.y.shape == (70000,) and ds.y.dtype == np.int64
    assert ds.feature_names[0] == "pixel_0_0" and ds.feature_names[29] == "pixel_1_1"
    train = ds.split == "train"
    np.testing.assert_array_equal(train, np.arange(70000) < 60000)
    assert (ds.split[~train] == "test").all()
    assert np.bincount(ds.y[train]).tolist() == [
        5923,
        6742,
        5958,
        6131,
        5842,
        5421,
        5918,
        6265,
        5851,
        5949,
    ]
    assert np.bincount(ds.y[~train]).tolist() == [
        980,
        1135,
        1032,
        1010,
        982,
        892,
        958,
        1028,
        974,
        1009,
    ]
    assert ds.y[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert ds.y[60000:60010].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    # the well-known normalisation constants of the training images
    assert ds.X[train].mean() == pytest.approx(0.1306604762738429, abs=1e-12)
    assert ds.X[train].std() == pytest.approx(0.3081078038564622, abs=1e-9)
    # pixels are exactly k/255
    np.testing.assert_array_equal(ds.X[0] * 255, np.rint(ds.X[0] * 255))


def test_truncated_mnist_file_is_an_error_naming_it(tmp_path: Path, shared_data: Path) -> None:
    source = shared_data / "mnist" / "train-labels-idx1-ubyte.gz"
    if not source.is_file():
        pytest.skip("the gzipped MNIST labels are not in the shared folder")
    (tmp_path / "mnist").mkdir()
    content = gzip.decompress(source.read_bytes())
    # a well-formed gzip of a truncated file: caught by the digest before the IDX reader
    (tmp_path / "mnist" / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(content[:-100]))
    pattern = r"mnist/train-labels-idx1-ubyte.*expected 65a50cbb"
    with pytest.raises(DataFileError, match=pattern) as caught:
        data.load("mnist", data_dir=tmp_path)
    assert caught.value.filename == "mnist/train-labels-idx1-ubyte"
