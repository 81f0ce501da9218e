"""Review (session 9) of the data loaders: a damaged copy of a file is a named error, never other data.

Every test works on copies in ``tmp_path``; the shared folder is only read.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from structnets import data
from structnets.data import files
from structnets.data.files import DataFileError


def _plain_iris(shared_data: Path, folder: Path, content_of) -> Path:  # noqa: ANN001 - the fixture's function
    folder.mkdir()
    path = folder / "bezdekIris.data"
    path.write_bytes(content_of("bezdekIris.data"))
    return path


def test_a_file_altered_in_place_with_its_size_and_mtime_kept_is_refused(
    shared_data: Path, tmp_path: Path, content_of
) -> None:  # noqa: ANN001
    # the parse cache (and verify's digest cache) were keyed on (path, size, mtime): a same-size edit
    # whose mtime was put back (touch -r, cp -p, rsync -t) returned the earlier, verified arrays
    path = _plain_iris(shared_data, tmp_path / "copy", content_of)
    assert data.load("iris", path.parent, download=False).X.shape == (150, 4)
    assert [s.ok for s in files.verify(path.parent) if s.dataset == "iris"] == [True]
    before = path.stat()
    content = bytearray(path.read_bytes())
    content[0:3] = b"9.9" if content[0:3] != b"9.9" else b"8.8"
    path.write_bytes(bytes(content))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    with pytest.raises(DataFileError, match=r"'bezdekIris.data' at .* has content SHA-256 [0-9a-f]{64}, expected"):
        data.load("iris", path.parent, download=False)
    statuses = [s for s in files.verify(path.parent) if s.dataset == "iris"]
    assert [s.ok for s in statuses] == [False]
    assert statuses[0].message.startswith("altered")


@pytest.mark.parametrize("name", ["bezdekIris.data", "bezdekIris.data.gz"])
def test_a_folder_in_place_of_a_file_is_named(shared_data: Path, tmp_path: Path, name: str) -> None:
    # it was skipped without a word: load() went on to the next folder (or downloaded), and the
    # error, when none had the file, said "was not found"
    folder = tmp_path / "copy"
    (folder / name).mkdir(parents=True)
    with pytest.raises(DataFileError, match=rf"{name} is a folder, not a file") as error:
        data.load("iris", folder, download=False)
    assert error.value.path == folder / name
    statuses = [s for s in files.verify(folder) if s.dataset == "iris"]
    assert [s.ok for s in statuses] == [False]
    assert "is a folder, not a file" in statuses[0].message
    assert statuses[0].path == folder / name


def test_a_broken_link_in_place_of_a_file_is_named(shared_data: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / "bezdekIris.data.gz").symlink_to(folder / "gone")
    with pytest.raises(DataFileError, match=r"bezdekIris.data.gz is a broken link, not a file"):
        data.load("iris", folder, download=False)


def test_a_link_to_a_good_copy_still_loads(shared_data: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / "bezdekIris.data.gz").symlink_to(shared_data / "bezdekIris.data.gz")
    assert data.load("iris", folder, download=False).X.shape == (150, 4)


def test_a_folder_copy_of_the_shared_data_still_loads(shared_data: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(shared_data, folder)
    assert data.load("abalone", folder, download=False).X.shape[0] == 4177
