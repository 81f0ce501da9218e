"""Where data files come from: lookup, content-digest verification and download.

A file is looked for, in order, in the ``data_dir`` argument, the ``STRUCTNETS_DATA`` environment
variable and the user cache ``~/.cache/structnets``; in each folder under its original name
(e.g. ``adult.data``, ``mnist/train-images-idx3-ubyte``) or gzipped with ``.gz`` appended. The
first copy found is used and must match the pinned SHA-256 of its *content* (the decompressed
bytes), so a ``.gz`` and an uncompressed copy of the same file both verify; a copy that does not
match is an error, never silently skipped. When no folder has the file it is downloaded from the
official archive into the cache: the member is extracted, its content digest checked, and the
file written atomically by :func:`structnets.atomic_io.write_bytes` (temporary file in the same
folder, fsync, then ``os.replace``). The registered files are in :mod:`.catalogue`.

Pinned digests are those of ``shared/data/PROVENANCE.md``, i.e. of the files UCI and the MNIST
site publish.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import os
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..atomic_io import write_bytes
from .catalogue import FILES, FileSpec

logger = logging.getLogger(__name__)

ENV_VAR = "STRUCTNETS_DATA"
"""Environment variable naming a folder of data files (checked after the ``data_dir`` argument)."""

PathArg = str | os.PathLike[str]


class DataFileError(ValueError):
    """A data file is missing, unreadable (e.g. a truncated gzip) or altered (digest mismatch).

    The message names the file; for a digest mismatch it gives the expected and the actual
    content SHA-256. The same facts are attributes, for callers that report them.

    Attributes:
        filename: the file's name as registered (e.g. ``"adult.data"``).
        path: where the offending copy lies, or None when no copy was found.
        expected_sha256: the pinned content digest, or None when not relevant.
        actual_sha256: the digest of the copy found, or None when it could not be computed.
    """

    def __init__(
        self,
        message: str,
        *,
        filename: str,
        path: Path | None = None,
        expected_sha256: str | None = None,
        actual_sha256: str | None = None,
    ) -> None:
        super().__init__(message)
        self.filename = filename
        self.path = path
        self.expected_sha256 = expected_sha256
        self.actual_sha256 = actual_sha256


@dataclass(frozen=True)
class FileStatus:
    """The result of checking one registered file (see :func:`verify`).

    Attributes:
        dataset: the data set that reads the file.
        filename: the file's registered name.
        path: the copy that :func:`structnets.data.load` would use, or None when none was found.
        ok: True when the copy exists, reads and has the pinned content digest.
        expected_sha256: the pinned content digest.
        actual_sha256: the content digest of the copy, or None (missing or unreadable).
        message: one line saying what was found.
    """

    dataset: str
    filename: str
    path: Path | None
    ok: bool
    expected_sha256: str
    actual_sha256: str | None
    message: str


# Content digests already computed in this process, keyed on (path, size, mtime_ns, inode, ctime_ns)
# (:func:`_stat_key`): a file that changes on disk gets a new key, so a stale digest is never reused.
_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}


def cache_dir() -> Path | None:
    """Return the user cache folder ``~/.cache/structnets`` (None if there is no home folder).

    Returns:
        the path; it is created only when a file is downloaded into it.
    """
    try:
        return Path.home() / ".cache" / "structnets"
    except RuntimeError:  # no HOME and no password-database entry
        return None


def data_dir(data_dir: PathArg | None = None) -> Path | None:
    """Return the folder looked in first: the argument, else ``STRUCTNETS_DATA``, else the cache.

    Args:
        data_dir: an explicit folder, as :func:`structnets.data.load` takes it.

    Returns:
        the folder (``~`` expanded; not checked for existence), or None when no argument or
        environment variable is given and there is no home folder.
    """
    if data_dir is not None:
        return _as_path("data_dir", data_dir)
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    return cache_dir()


def search_dirs(data_dir: PathArg | None = None) -> list[Path]:
    """Return the existing folders searched, in order: argument, ``STRUCTNETS_DATA``, cache.

    Args:
        data_dir: an explicit folder; it must exist.

    Returns:
        the folders, without duplicates; the cache is listed only when it exists.

    Raises:
        ValueError: ``data_dir`` or ``STRUCTNETS_DATA`` names something that is not a folder (a
            typo there would otherwise silently trigger a download).
        TypeError: ``data_dir`` is not a str or path.
    """
    dirs: list[Path] = []
    if data_dir is not None:
        path = _as_path("data_dir", data_dir)
        if not path.is_dir():
            raise ValueError(f"`data_dir` must be an existing folder, got {str(path)!r}")
        dirs.append(path)
    env = os.environ.get(ENV_VAR)
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise ValueError(f"environment variable {ENV_VAR} must name an existing folder, got {env!r}")
        dirs.append(path)
    cache = cache_dir()
    if cache is not None and cache.is_dir():
        dirs.append(cache)
    unique: list[Path] = []
    for path in dirs:
        if all(path.resolve() != seen.resolve() for seen in unique):
            unique.append(path)
    return unique


def searched(data_dir: PathArg | None = None) -> str:
    """Describe every place a file is looked for, in order, and whether each exists (for messages).

    Example: ``"STRUCTNETS_DATA (not set), then the cache /home/me/.cache/structnets (does not
    exist yet)"``.
    """
    parts: list[str] = []
    if data_dir is not None:
        path = _as_path("data_dir", data_dir)
        parts.append(f"the data_dir argument {path}" + ("" if path.is_dir() else " (not a folder)"))
    env = os.environ.get(ENV_VAR)
    if env:
        path = Path(env).expanduser()
        parts.append(f"{ENV_VAR}={path}" + ("" if path.is_dir() else " (not a folder)"))
    else:
        parts.append(f"{ENV_VAR} (not set)")
    cache = cache_dir()
    if cache is None:
        parts.append("no cache (there is no home folder)")
    else:
        parts.append(f"the cache {cache}" + ("" if cache.is_dir() else " (does not exist yet)"))
    return ", then ".join(parts)


def _how_to_get(spec: FileSpec) -> str:
    return (
        f"structnets.data.load({spec.dataset!r}) downloads it from {spec.urls[0]} into the cache when "
        f"the network is reachable; otherwise put a copy (plain or .gz) in a folder and point {ENV_VAR} "
        "at it, then `structnets data verify` checks it"
    )


def locate(spec: FileSpec, dirs: list[Path]) -> Path | None:
    """Return the first copy of ``spec`` in ``dirs`` (plain name first, then ``.gz``), or None."""
    for folder in dirs:
        for candidate in (folder / spec.filename, folder / f"{spec.filename}.gz"):
            if candidate.is_file():
                return candidate
            if os.path.lexists(candidate):  # a folder, a broken link, a pipe: never skipped silently
                raise DataFileError(
                    f"data file {spec.filename!r}: {candidate} is {_not_a_file(candidate)}, not a file; remove "
                    "it or put a verified copy there",
                    filename=spec.filename,
                    path=candidate,
                )
    return None


def _not_a_file(path: Path) -> str:
    if path.is_dir():
        return "a folder"
    if path.is_symlink() and not path.exists():
        return "a broken link"
    return "something other than a regular file"


def _stat_key(path: Path) -> tuple[str, int, int, int, int]:
    """What identifies one version of a file on disk, for the per-process caches.

    Size and mtime alone miss a same-size edit whose mtime was put back (``touch -r``, ``cp -p``,
    ``rsync -t``); the inode changes when a file is replaced and the ctime on every write, and
    neither can be set back.
    """
    stat = path.stat()
    return (str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns)


def read_verified(spec: FileSpec, path: Path) -> bytes:
    """Read a copy of ``spec``, decompress it if it ends in ``.gz``, and check its content digest.

    Args:
        spec: the registered file.
        path: the copy to read.

    Returns:
        the content (decompressed bytes).

    Raises:
        DataFileError: the copy cannot be read or decompressed (e.g. a truncated gzip), or its
            content SHA-256 differs from the pinned one (the message gives both digests).
    """
    try:
        key = _stat_key(path)
        raw = path.read_bytes()
    except OSError as exc:
        raise DataFileError(
            f"data file {spec.filename!r} at {path} cannot be read: {exc}",
            filename=spec.filename,
            path=path,
        ) from exc
    content = _decompress(raw, spec, path) if path.name.endswith(".gz") else raw
    actual = hashlib.sha256(content).hexdigest()
    _DIGESTS[key] = actual
    _check_digest(spec, path, actual)
    return content


def content_sha256(spec: FileSpec, path: Path) -> str:
    """Return the SHA-256 of the content of ``path`` (decompressed when it ends in ``.gz``).

    Digests are remembered per process, keyed on (path, size, mtime), so re-verifying an
    unchanged file is free.

    Raises:
        DataFileError: the file cannot be read or decompressed.
    """
    try:
        key = _stat_key(path)
    except OSError as exc:
        raise DataFileError(
            f"data file {spec.filename!r} at {path} cannot be read: {exc}",
            filename=spec.filename,
            path=path,
        ) from exc
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        try:
            opener = gzip.open if path.name.endswith(".gz") else open
            with opener(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        except (OSError, EOFError, zlib.error) as exc:
            raise _unreadable(spec, path, exc) from exc
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def resolve(dataset: str, data_dir: PathArg | None = None, *, download: bool = True) -> list[Path]:
    """Return a path for each registered file of ``dataset``, downloading missing ones if allowed.

    The copies found are not verified here (:func:`read_verified` does it while reading); a
    downloaded file is verified before it is written.

    Args:
        dataset: a registered name.
        data_dir: an explicit folder searched first.
        download: whether a file found nowhere may be downloaded into the cache.

    Returns:
        the paths, in the order of ``FILES[dataset]``.

    Raises:
        DataFileError: a file is missing and cannot be downloaded, or the download fails its
            digest check.
    """
    specs = FILES[dataset]
    dirs = search_dirs(data_dir)
    found = [locate(spec, dirs) for spec in specs]
    archives: dict[str, bytes] = {}  # one fetch per archive, e.g. adult.zip for both files
    for index, spec in enumerate(specs):
        if found[index] is None:
            found[index] = _download(spec, dirs, archives, allowed=download, where=searched(data_dir))
    return [path for path in found if path is not None]


def verify(data_dir: PathArg | None = None) -> list[FileStatus]:
    """Check every registered file that :func:`structnets.data.load` would read; download nothing.

    Args:
        data_dir: an explicit folder searched first (as for ``load``).

    Returns:
        one :class:`FileStatus` per registered file, in :func:`structnets.data.names` order.
    """
    dirs = search_dirs(data_dir)
    where = searched(data_dir)
    statuses: list[FileStatus] = []
    for dataset, specs in FILES.items():
        for spec in specs:
            actual: str | None = None
            try:
                path = locate(spec, dirs)
            except DataFileError as exc:  # e.g. a folder of the file's name
                statuses.append(
                    FileStatus(dataset, spec.filename, exc.path, False, spec.sha256, None, f"unreadable: {exc}")
                )
                continue
            if path is None:
                ok = False
                message = f"missing: looked in {where}; load({dataset!r}) would download it from {spec.urls[0]}"
            else:
                try:
                    actual = content_sha256(spec, path)
                except DataFileError as exc:
                    ok, message = False, f"unreadable: {exc}"
                else:
                    ok = actual == spec.sha256
                    message = (
                        "ok: content SHA-256 matches"
                        if ok
                        else f"altered: content SHA-256 is {actual}, expected {spec.sha256}"
                    )
            statuses.append(FileStatus(dataset, spec.filename, path, ok, spec.sha256, actual, message))
    return statuses


def fetch_url(url: str, *, timeout: float = 120.0) -> bytes:
    """Return the bytes at ``url`` (``https://``, ``http://`` or ``file://``).

    Kept as a module-level function so that tests (and offline setups) can replace it.

    Raises:
        OSError: the download failed (``urllib.error.URLError`` is an ``OSError``).
    """
    request = urllib.request.Request(url, headers={"User-Agent": "structnets-data"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def _download(
    spec: FileSpec, dirs: list[Path], archives: dict[str, bytes], *, allowed: bool, where: str | None = None
) -> Path:
    where = where or (", then ".join(str(d) for d in dirs) or "no folder")
    if not allowed:
        raise DataFileError(
            f"data file {spec.filename!r} (data set {spec.dataset!r}) was not found: looked in {where}, "
            f"under its name and with .gz appended; downloading is disabled (download=False). "
            f"{_how_to_get(spec)}",
            filename=spec.filename,
        )
    cache = cache_dir()
    if cache is None:
        raise DataFileError(
            f"data file {spec.filename!r} (data set {spec.dataset!r}) was not found: looked in {where}; "
            f"there is no home folder to download it into: download it from {spec.urls[0]}, put it in a "
            f"folder and point {ENV_VAR} at it",
            filename=spec.filename,
        )
    failures: list[str] = []
    mismatch: DataFileError | None = None
    for url in spec.urls:
        try:
            if url not in archives:
                logger.info("downloading %s for %s", url, spec.filename)
                archives[url] = fetch_url(url)
            stored = _prepare(spec, url, archives[url])
        except DataFileError as exc:
            mismatch = mismatch or exc
            continue
        except (OSError, ValueError) as exc:  # URLError, HTTP errors, unknown URL types
            failures.append(f"{url}: {exc}")
            continue
        target = cache / (spec.store_as or spec.filename)
        write_bytes(target, stored, parents=True, suffix=".part")
        logger.info("wrote %s", target)
        return target
    if mismatch is not None:
        raise mismatch
    raise DataFileError(
        f"data file {spec.filename!r} (data set {spec.dataset!r}) was not found: looked in {where}; "
        f"downloading it failed ({'; '.join(failures)}). Download it yourself from {spec.urls[0]} "
        f"into {cache} or into a folder that {ENV_VAR} names (plain or .gz), then "
        "`structnets data verify` checks it",
        filename=spec.filename,
    )


def _prepare(spec: FileSpec, url: str, payload: bytes) -> bytes:
    """Extract and check the bytes to store for ``spec`` from a downloaded ``payload``."""
    data = payload
    for part in spec.member:
        data = _extract(data, part, spec, url)
    if spec.member_sha256 is not None:
        actual = hashlib.sha256(data).hexdigest()
        if actual != spec.member_sha256:
            raise DataFileError(
                f"data file {spec.filename!r}: the archive member {spec.member[-1]!r} downloaded "
                f"from {url} has SHA-256 {actual}, expected {spec.member_sha256}",
                filename=spec.filename,
                expected_sha256=spec.member_sha256,
                actual_sha256=actual,
            )
    if spec.convert is not None:
        data = spec.convert(data)
    stored_name = spec.store_as or spec.filename
    content = _decompress(data, spec, Path(url)) if stored_name.endswith(".gz") else data
    actual = hashlib.sha256(content).hexdigest()
    if actual != spec.sha256:
        raise DataFileError(
            f"data file {spec.filename!r} downloaded from {url} has content SHA-256 {actual}, "
            f"expected {spec.sha256}; nothing was written",
            filename=spec.filename,
            expected_sha256=spec.sha256,
            actual_sha256=actual,
        )
    return data


def _extract(archive: bytes, member: str, spec: FileSpec, url: str) -> bytes:
    try:
        with zipfile.ZipFile(io.BytesIO(archive)) as bundle:
            names = bundle.namelist()
            matches = [n for n in names if n == member or n.endswith(f"/{member}")]
            if not matches:
                raise ValueError(f"the archive has no member {member!r} (it has {names})")
            return bundle.read(matches[0])
    except zipfile.BadZipFile as exc:
        raise ValueError(f"the download is not a zip archive ({exc})") from exc


def _decompress(raw: bytes, spec: FileSpec, path: Path) -> bytes:
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
        raise _unreadable(spec, path, exc) from exc


def _unreadable(spec: FileSpec, path: Path, exc: BaseException) -> DataFileError:
    return DataFileError(
        f"data file {spec.filename!r} at {path} cannot be decompressed ({type(exc).__name__}: "
        f"{exc}); it is truncated or corrupt, replace it with a verified copy",
        filename=spec.filename,
        path=path,
    )


def _check_digest(spec: FileSpec, path: Path, actual: str) -> None:
    if actual == spec.sha256:
        return
    cache = cache_dir()
    in_cache = cache is not None and cache in path.parents
    advice = "delete it to download it again" if in_cache else "replace it with the official file"
    raise DataFileError(
        f"data file {spec.filename!r} at {path} has content SHA-256 {actual}, expected "
        f"{spec.sha256}; it is altered or from another source ({advice})",
        filename=spec.filename,
        path=path,
        expected_sha256=spec.sha256,
        actual_sha256=actual,
    )


def _as_path(name: str, value: PathArg) -> Path:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"`{name}` must be a str or path, got {value!r} ({type(value).__name__})")
    return Path(value).expanduser()
