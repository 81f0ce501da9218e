"""The registered data files: each file's name, pinned content SHA-256 and official download URLs.

Digests are those of ``shared/data/PROVENANCE.md``, i.e. of the files UCI and the MNIST site publish.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ._xlsx import xlsx_to_csv


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
