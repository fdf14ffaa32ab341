"""A bundle as read from disk (or an image): files, parsed objects, annotations.

Loading never stops at the first defect: whatever cannot be read is recorded as a
finding of the ``loader`` suite, so that validation reports every problem at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olmtool import yamlread
from olmtool.bundle import format as fmt
from olmtool.errors import InputError, display_path
from olmtool.findings import Finding, Severity
from olmtool.safefiles import MAX_FILE_BYTES, read_regular


@dataclass
class Object:
    """A Kubernetes object from one of the bundle's files.

    ``document`` is plain data (sigs.k8s.io/yaml's reading); lines come from ``source``,
    the parsed file, only when a finding asks for one.
    """

    document: Any
    file: str  # relative to the bundle root, e.g. "manifests/foo.yaml"
    bundle: Bundle
    source: yamlread.YamlFile | None = field(default=None, repr=False)
    index: int = 0  # which of the file's documents

    @property
    def start_line(self) -> int | None:
        return self.source.start_line(self.index) if self.source else None

    def line_at(self, path: str) -> int | None:
        """Line of the deepest node of ``path`` (``spec.install.spec.deployments[0]``)."""
        return self.source.line_at(self.index, path) if self.source else None

    @property
    def kind(self) -> str:
        return str(self.document.get("kind") or "") if isinstance(self.document, dict) else ""

    @property
    def api_version(self) -> str:
        value = self.document.get("apiVersion") if isinstance(self.document, dict) else None
        return str(value or "")

    @property
    def name(self) -> str:
        metadata = self.document.get("metadata") if isinstance(self.document, dict) else None
        return str((metadata or {}).get("name") or "") if isinstance(metadata, dict) else ""

    def get(self, dotted: str, default: Any = None) -> Any:
        """The value at ``a.b.c`` (mappings only), or ``default``."""
        node = self.document
        for key in dotted.split("."):
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return node

    def text_line(self, path: str, line: int) -> int | None:
        """The file line of line ``line`` (0-based) of the string at ``path`` (an embedded
        text such as alm-examples), where the YAML keeps lines as written."""
        return self.source.text_line(self.index, path, line) if self.source else None

    def finding(
        self,
        check: str,
        severity: Severity,
        message: str,
        path: str | None = None,
        *,
        line: int | None = None,
    ) -> Finding:
        """A finding at ``line``, else at the line of ``path``, else at the object's start."""
        if line is None and path:
            line = self.line_at(path)
        if line is None:
            line = self.start_line
        return Finding(check, severity, message, self.bundle.display(self.file), line, path)


@dataclass
class Bundle:
    """Everything a validator needs to know about one bundle."""

    root: Path
    label: str | None = None  # how files are named in findings, e.g. an image reference
    files: dict[str, bytes] = field(default_factory=dict)
    objects: list[Object] = field(default_factory=list)
    annotations: dict[str, Any] | None = None
    annotations_document: Any = None  # plain data; lines from annotations_source
    annotations_source: yamlread.YamlFile | None = None
    image_labels: dict[str, str] | None = None
    problems: list[Finding] = field(default_factory=list)
    # what the loader saw besides the files it read: real directories (never symlinks)
    # and entries it refused to read (a finding each), relative to the root
    directories: set[str] = field(default_factory=set)
    unreadable: set[str] = field(default_factory=set)

    def display(self, relative: str) -> str:
        if self.label:
            return f"{self.label}:/{relative}"
        return display_path(self.root / relative)

    @property
    def manifest_objects(self) -> list[Object]:
        return [o for o in self.objects if o.file.startswith(f"{fmt.MANIFESTS_DIR}/")]

    @property
    def csvs(self) -> list[Object]:
        return [o for o in self.manifest_objects if o.kind == fmt.CSV_KIND]

    @property
    def csv(self) -> Object | None:
        csvs = self.csvs
        return csvs[0] if len(csvs) == 1 else None

    @property
    def crds(self) -> list[Object]:
        return [o for o in self.manifest_objects if o.kind == fmt.CRD_KIND]

    def annotation_line(self, path: str) -> int | None:
        """Line of ``path`` (``annotations[key]``) in metadata/annotations.yaml."""
        source = self.annotations_source
        return source.line_at(0, path) if source else None

    def problem(
        self,
        check: str,
        message: str,
        file: str | None = None,
        line: int | None = None,
        severity: Severity = "error",
    ) -> None:
        # the bundle itself: an image by its reference, never an unpacked copy's path
        where = self.display(file) if file is not None else self.label or display_path(self.root)
        self.problems.append(Finding(check, severity, message, where, line))


def load_bundle(root: Path, *, label: str | None = None) -> Bundle:
    """Read a bundle directory; defects become ``loader``/``format`` findings, not errors.

    Only a path that is not a directory at all raises :class:`InputError`.
    """
    if not root.is_dir():
        raise InputError("not a bundle directory (expected manifests/ and metadata/)", path=root)
    bundle = Bundle(root=root, label=label)
    _read_tree(bundle)
    _load_manifests(bundle)
    _load_annotations(bundle)
    return bundle


def load_bundle_tree(
    files: Mapping[str, bytes], directories: Iterable[str], *, label: str
) -> Bundle:
    """A bundle whose tree is already in memory (an image's regular files and
    directories), with the findings :func:`load_bundle` gives for that tree on disk."""
    bundle = Bundle(root=Path(label), label=label)
    bundle.directories.update(directories)
    for relative in sorted(files):
        data = files[relative]
        if len(data) > MAX_FILE_BYTES:  # as read_regular refuses it on disk
            bundle.unreadable.add(relative)
            message = f"{len(data)} bytes, more than the {MAX_FILE_BYTES} allowed"
            bundle.problem(
                _UNREADABLE, f"{message}: only regular files inside the bundle are read", relative
            )
        else:
            bundle.files[relative] = data
    _load_manifests(bundle)
    _load_annotations(bundle)
    return bundle


def _read_tree(bundle: Bundle) -> None:
    """Every regular file below the root, through :func:`~olmtool.safefiles.read_regular`:
    directories are entered, never followed through symlinks; a symlink is read only when
    it leads to a regular file inside the bundle. Anything else (dangling or looping
    symlinks, links out of the bundle or to directories, FIFOs, devices, sockets, huge
    files) is a ``loader/unreadable-file`` finding and never blocks or leaves the tree."""
    pending = [""]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(bundle.root / directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as exc:
            bundle.unreadable.add(directory)
            bundle.problem(_UNREADABLE, f"cannot list: {exc.strerror or exc}", directory or ".")
            continue
        for entry in entries:
            relative = f"{directory}/{entry.name}" if directory else entry.name
            try:
                is_directory = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_directory = False
            if is_directory:
                bundle.directories.add(relative)
                pending.append(relative)
                continue
            try:
                bundle.files[relative] = read_regular(Path(entry.path), root=bundle.root)
            except InputError as exc:
                bundle.unreadable.add(relative)
                bundle.problem(
                    _UNREADABLE,
                    f"{exc.message}: only regular files inside the bundle are read",
                    relative,
                )


_UNREADABLE = "loader/unreadable-file"


def _has_directory(bundle: Bundle, name: str, check: str) -> bool:
    """Whether the bundle has the top-level directory ``name``; a finding says it has not
    (unless the loader already reported what is there instead)."""
    if name in bundle.directories:
        return True
    if name not in bundle.unreadable:
        bundle.problem(check, f"the bundle has no {name}/ directory")
    return False


def _load_manifests(bundle: Bundle) -> None:
    if not _has_directory(bundle, fmt.MANIFESTS_DIR, "format/manifests-missing"):
        return
    prefix = f"{fmt.MANIFESTS_DIR}/"
    entries = sorted(
        name
        for name in (*bundle.files, *bundle.directories, *bundle.unreadable)
        if name.startswith(prefix) and "/" not in name[len(prefix) :]
    )
    for relative in entries:
        if relative.rpartition("/")[2].startswith("."):
            bundle.problem(
                "loader/hidden-file", "hidden files are not allowed in manifests/", relative
            )
        elif relative in bundle.directories:
            bundle.problem(
                "loader/subdirectory", "subdirectories are not allowed in manifests/", relative
            )
        elif relative in bundle.files:
            _load_manifest(bundle, relative)
    csvs = bundle.csvs
    if not csvs and not any(p.check == "loader/csv-parse" for p in bundle.problems):
        bundle.problem("loader/no-csv", "manifests/ holds no ClusterServiceVersion", "manifests")
    for extra in csvs[1:]:
        bundle.problem(
            "loader/multiple-csvs",
            f"a second ClusterServiceVersion ({extra.name}); a bundle has exactly one",
            extra.file,
            extra.start_line,
        )


def _load_manifest(bundle: Bundle, relative: str) -> None:
    data = bundle.files[relative]
    try:
        source = _parse(data)
        for document in source.documents:
            if not isinstance(document, dict):
                raise InputError(f"expected a Kubernetes object, found a {_kind(document)}")
    except (InputError, UnicodeDecodeError) as exc:
        looks_like_csv = b"ClusterServiceVersion" in data or "clusterserviceversion" in relative
        check = "loader/csv-parse" if looks_like_csv else "loader/manifest-parse"
        what = "the ClusterServiceVersion" if looks_like_csv else "this manifest"
        line = exc.line if isinstance(exc, InputError) else None
        reason = exc.message if isinstance(exc, InputError) else "not UTF-8 text"
        bundle.problem(check, f"cannot parse {what}: {reason}", relative, line)
        return
    _duplicate_keys(bundle, relative, source)
    for index, document in enumerate(source.documents):
        bundle.objects.append(Object(document, relative, bundle, source, index))


def _parse(data: bytes, *, errors: str = "strict") -> yamlread.YamlFile:
    return yamlread.parse(data.decode("utf-8", errors=errors))


def _kind(value: Any) -> str:
    return {list: "list", str: "str", int: "int", float: "float", bool: "bool"}.get(
        type(value), type(value).__name__
    )


def _duplicate_keys(bundle: Bundle, relative: str, source: yamlread.YamlFile) -> None:
    """Go's yaml.v2 keeps the last of repeated keys; different values lose data silently."""
    for duplicate in source.duplicates:
        if not duplicate.same:
            bundle.problem(
                "loader/duplicate-key",
                f"key {duplicate.key!r} is repeated (first at line {duplicate.first_line}) with "
                "a different value; Kubernetes and opm keep only the last one",
                relative,
                duplicate.line,
                "warning",
            )


def _load_annotations(bundle: Bundle) -> None:
    if not _has_directory(bundle, fmt.METADATA_DIR, "format/metadata-missing"):
        return
    relative = fmt.ANNOTATIONS_FILE
    if relative in bundle.unreadable:
        return  # loader/unreadable-file says what it is
    if relative not in bundle.files:
        bundle.problem("format/annotations-missing", "no metadata/annotations.yaml", "metadata")
        return
    try:
        source = _parse(bundle.files[relative], errors="replace")
        if len(source.documents) > 1:
            line = source.start_line(1)
            raise InputError("expected a single YAML document", line=line)
    except InputError as exc:
        bundle.problem(
            "format/annotations-parse", f"cannot parse: {exc.message}", relative, exc.line
        )
        return
    _duplicate_keys(bundle, relative, source)
    document = source.documents[0] if source.documents else None
    annotations = document.get("annotations") if isinstance(document, dict) else None
    if not isinstance(annotations, dict):
        bundle.problem(
            "format/annotations-parse", "expected a mapping under 'annotations:'", relative, 1
        )
        return
    bundle.annotations_document = document
    bundle.annotations_source = source
    # map[string]string in Go: scalars as sigs.k8s.io/yaml writes them (true -> "true")
    bundle.annotations = {k: yamlread.go_string(v) for k, v in annotations.items()}
