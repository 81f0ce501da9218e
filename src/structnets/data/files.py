"""Where data files come from: lookup, content-digest verification and download.

A file is looked for, in order, in the ``data_dir`` argument, the ``STRUCTNETS_DATA`` environment
variable and the user cache ``~/.cache/structnets``; in each folder under its original name
(e.g. ``adult.data``, ``mnist/train-images-idx3-ubyte``) or gzipped with ``.gz`` appended. The
first copy found is used and must match the pinned SHA-256 of its *content* (the decompressed
bytes), so a ``.gz`` and an uncompressed copy of the same file both verify; a copy that does not
match is an error, never silently skipped. When no folder has the file it is downloaded from the
official archive into the cache: the member is extracted, its content digest checked, and the
file written atomically (temporary file in the same folder, then ``os.replace``).

Pinned digests are those of ``shared/data/PROVENANCE.md``, i.e. of the files UCI and the MNIST
site publish.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import os
import tempfile
import urllib.request
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ._xlsx import xlsx_to_csv

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
class FileSpec:
    """One data file: its name, its pinned content digest and where to download it.

    Attributes:
        dataset: the data set that reads it (a name of :func:`structnets.data.names`).
        filename: relative path in a data folder, without ``.gz``
            (e.g. ``"mnist/t10k-labels-idx1-ubyte"``).
        sha256: SHA-256 of the file's content (decompressed bytes).
        urls: official archive URLs (mirrors), tried in order.
        member: path of the file inside the downloaded zip; several entries for a zip nested in
            a zip; empty when the download is the file itself. A name matches an archive entry
            equal to it or ending in ``/name``.
        store_as: relative path written in the cache (default ``filename``); ends in ``.gz`` when
            the download is gzipped and kept that way.
        member_sha256: optional digest of the extracted member before ``convert``.
        convert: optional map from the extracted member to the file's content (the real-estate
            workbook to its CSV).
    """

    dataset: str
    filename: str
    sha256: str
    urls: tuple[str, ...]
    member: tuple[str, ...] = ()
    store_as: str | None = None
    member_sha256: str | None = None
    convert: Callable[[bytes], bytes] | None = None


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


_UCI = "https://archive.ics.uci.edu/static/public"
_MNIST_MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist",
    "https://storage.googleapis.com/cvdf-datasets/mnist",
)


def _mnist(name: str, sha256: str) -> FileSpec:
    return FileSpec(
        dataset="mnist",
        filename=f"mnist/{name}",
        sha256=sha256,
        urls=tuple(f"{mirror}/{name}.gz" for mirror in _MNIST_MIRRORS),
        store_as=f"mnist/{name}.gz",
    )


FILES: dict[str, tuple[FileSpec, ...]] = {
    "iris": (
        FileSpec(
            "iris",
            "bezdekIris.data",
            "0fed2a99db77ec533a62dc66894d3ec6df3b58b6a8f3cf4a6b47e4086b7f97dc",
            (f"{_UCI}/53/iris.zip",),
            member=("bezdekIris.data",),
        ),
    ),
    "rice": (
        FileSpec(
            "rice",
            "Rice_Cammeo_Osmancik.arff",
            "1af97883100c89de2ea2972f7a28d428f4f1c14711a61defc0b0569e9eb65665",
            (f"{_UCI}/545/rice+cammeo+and+osmancik.zip",),
            member=("Rice_Cammeo_Osmancik.arff",),
        ),
    ),
    "bank-marketing": (
        FileSpec(
            "bank-marketing",
            "bank-full.csv",
            "d1513ec63b385506f7cfce9f2c5caa9fe99e7ba4e8c3fa264b3aaf0f849ed32d",
            (f"{_UCI}/222/bank+marketing.zip",),
            member=("bank.zip", "bank-full.csv"),
        ),
    ),
    "adult": (
        FileSpec(
            "adult",
            "adult.data",
            "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
            (f"{_UCI}/2/adult.zip",),
            member=("adult.data",),
        ),
        FileSpec(
            "adult",
            "adult.test",
            "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
            (f"{_UCI}/2/adult.zip",),
            member=("adult.test",),
        ),
    ),
    "real-estate": (
        FileSpec(
            "real-estate",
            "real_estate_valuation.csv",
            "67e7f24cb39fa509d6c452d11c02ac6298b9bceb61166acdb5969ee68307a395",
            (f"{_UCI}/477/real+estate+valuation+data+set.zip",),
            member=("Real estate valuation data set.xlsx",),
            member_sha256="597d72fcc6c0539e6035a033ddb387db48fff3fb1f3c98fee31fe081c64a9059",
            convert=xlsx_to_csv,
        ),
    ),
    "abalone": (
        FileSpec(
            "abalone",
            "abalone.data",
            "de37cdcdcaaa50c309d514f248f7c2302a5f1f88c168905eba23fe2fbc78449f",
            (f"{_UCI}/1/abalone.zip",),
            member=("abalone.data",),
        ),
    ),
    "wine-quality": (
        FileSpec(
            "wine-quality",
            "winequality-red.csv",
            "4a402cf041b025d4566d954c3b9ba8635a3a8a01e039005d97d6a710278cf05e",
            (f"{_UCI}/186/wine+quality.zip",),
            member=("winequality-red.csv",),
        ),
        FileSpec(
            "wine-quality",
            "winequality-white.csv",
            "76c3f809815c17c07212622f776311faeb31e87610d52c26d87d6e361b169836",
            (f"{_UCI}/186/wine+quality.zip",),
            member=("winequality-white.csv",),
        ),
    ),
    "bike-sharing": (
        FileSpec(
            "bike-sharing",
            "hour.csv",
            "e03de4ee4ef4dc376ac6e04bf829673c6269e8eba5c60fa121640fa2f829504f",
            (f"{_UCI}/275/bike+sharing+dataset.zip",),
            member=("hour.csv",),
        ),
    ),
    "mnist": (
        _mnist(
            "train-images-idx3-ubyte",
            "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
        ),
        _mnist(
            "train-labels-idx1-ubyte",
            "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
        ),
        _mnist(
            "t10k-images-idx3-ubyte",
            "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
        ),
        _mnist(
            "t10k-labels-idx1-ubyte",
            "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
        ),
    ),
}
"""Registered files per data set, in the order the loaders read them."""

# Content digests already computed in this process, keyed on (path, size, mtime_ns): a file that
# changes on disk gets a new key, so a stale digest is never reused.
_DIGESTS: dict[tuple[str, int, int], str] = {}


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
            raise ValueError(
                f"environment variable {ENV_VAR} must name an existing folder, got {env!r}"
            )
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
    return None


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
        stat = path.stat()
        raw = path.read_bytes()
    except OSError as exc:
        raise DataFileError(
            f"data file {spec.filename!r} at {path} cannot be read: {exc}",
            filename=spec.filename,
            path=path,
        ) from exc
    content = _decompress(raw, spec, path) if path.name.endswith(".gz") else raw
    actual = hashlib.sha256(content).hexdigest()
    _DIGESTS[(str(path), stat.st_size, stat.st_mtime_ns)] = actual
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
        stat = path.stat()
    except OSError as exc:
        raise DataFileError(
            f"data file {spec.filename!r} at {path} cannot be read: {exc}",
            filename=spec.filename,
            path=path,
        ) from exc
    key = (str(path), stat.st_size, stat.st_mtime_ns)
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
            path = locate(spec, dirs)
            actual: str | None = None
            if path is None:
                ok = False
                message = (
                    f"missing: looked in {where}; load({dataset!r}) would download it "
                    f"from {spec.urls[0]}"
                )
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
            statuses.append(
                FileStatus(dataset, spec.filename, path, ok, spec.sha256, actual, message)
            )
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
        _atomic_write(target, stored)
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


def _atomic_write(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` so that readers see either no file or the whole file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".part", dir=target.parent
    )
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_umask())  # as open() would create it; mkstemp gives 0600
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
