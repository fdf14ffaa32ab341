"""What ``olmtool init`` is told, checked once, and every name derived from it.

Each check raises :class:`~olmtool.errors.ArgumentError` naming the keyword argument (the
CLI names its flag), so a bad name never reaches a generated file: the package is a
DNS-1123 label (OLM names the CSV ``<package>.v<version>`` and the Deployment after it),
the group a DNS-1123 subdomain with a dot (the apiserver's rule for a CRD's group), the
kind UpperCamelCase, the versions semver and a Kubernetes API version.
"""

from __future__ import annotations

import keyword
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import semver

from olmtool.bundle import INSTALL_MODE_TYPES
from olmtool.crd import pluralize
from olmtool.errors import ArgumentError, OlmtoolError
from olmtool.images import parse_reference
from olmtool.scaffold.defaults import (
    DEFAULT_API_VERSION,
    DEFAULT_CHANNEL,
    DEFAULT_IMAGE,
    DEFAULT_INSTALL_MODES,
    DEFAULT_VERSION,
)

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_UPPER_CAMEL = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_API_VERSION = re.compile(r"^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$")
_CHANNEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Top-level modules crd generate itself imports: a schema package of that name would
# shadow them (a fixed list, so the output does not depend on what is installed).
_TAKEN_MODULES = frozenset({"olmtool", "pydantic", "pydantic_core", "semver", "typer", "yaml"})
# Groups the apiserver reserves for Kubernetes' own APIs (api-approved.kubernetes.io).
_PROTECTED_GROUPS = ("k8s.io", "kubernetes.io")


@dataclass(frozen=True)
class ProjectNames:
    """Everything the templates need, validated: given names and derived ones."""

    package: str
    group: str
    kind: str
    version: str
    api_version: str
    channel: str
    image: str
    domain: str
    install_modes: tuple[str, ...]

    @property
    def display_name(self) -> str:
        """``foo-operator`` -> ``Foo Operator`` (what operator-sdk shows too)."""
        return " ".join(word.capitalize() for word in self.package.split("-"))

    @property
    def module(self) -> str:
        """The Python package holding the schemas: the package name in snake_case, kept
        clear of keywords, leading digits and module names it would shadow."""
        name = self.package.replace("-", "_")
        usable = name.isidentifier() and not keyword.iskeyword(name)
        if not usable or name in sys.stdlib_module_names or name in _TAKEN_MODULES:
            return f"project_{name}"
        return name

    @property
    def kind_lower(self) -> str:
        return self.kind.lower()

    @property
    def plural(self) -> str:
        return pluralize(self.kind.lower())  # the CRD's own rule, so the names agree

    @property
    def resource_variable(self) -> str:
        """``EtcdCluster`` -> ``etcd_cluster``, the ``CustomResource``'s name in Python."""
        name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", self.kind).lower()
        if keyword.iskeyword(name) or name in (self.api_version, "group"):
            return f"{name}_resource"
        return name

    @property
    def group_prefix(self) -> str:
        """The group's first label, as kubebuilder names samples (``demo_v1alpha1_widget``)."""
        return self.group.split(".", 1)[0]

    @property
    def csv_file(self) -> str:
        return f"{self.package}.clusterserviceversion.yaml"


def project_names(
    *,
    package: str,
    group: str,
    kind: str,
    version: str = DEFAULT_VERSION,
    api_version: str = DEFAULT_API_VERSION,
    channel: str = DEFAULT_CHANNEL,
    image: str = DEFAULT_IMAGE,
    domain: str | None = None,
    install_modes: Sequence[str] = DEFAULT_INSTALL_MODES,
) -> ProjectNames:
    """Check every name; ``group`` without a dot is completed with ``domain``
    (kubebuilder's ``--group demo --domain example.com``)."""
    check_package(package)
    check_semver(version)
    full_group = check_group(group, domain)
    check_kind(kind, full_group)
    check_api_version(api_version)
    check_channel(channel)
    return ProjectNames(
        package=package,
        group=full_group,
        kind=kind,
        version=version,
        api_version=api_version,
        channel=channel,
        image=_image(image, package, version),
        domain=domain or _parent_domain(full_group),
        install_modes=parse_install_modes(install_modes),
    )


def check_package(package: str) -> None:
    if not (_DNS_LABEL.match(package) and len(package) <= 63):
        raise ArgumentError(
            f"{package!r} is not a DNS-1123 label (lower case letters, digits and '-', "
            "at most 63, starting and ending with a letter or digit), like foo-operator",
            argument="package",
        )


def check_semver(version: str) -> None:
    if not semver.Version.is_valid(version):
        raise ArgumentError(
            f"{version!r} is not a semantic version (like 0.1.0)", argument="version"
        )


def check_group(group: str, domain: str | None = None) -> str:
    """The full group (``group``, or ``group.domain`` when ``group`` has no dot)."""
    if domain is not None:
        check_subdomain(domain, argument="domain")
    if "." not in group and domain:
        group = f"{group}.{domain}"
    check_subdomain(group, argument="group")
    if "." not in group:
        raise ArgumentError(
            f"{group!r} needs a dot: a DNS subdomain like demo.example.com (or pass --domain)",
            argument="group",
        )
    if any(group == p or group.endswith(f".{p}") for p in _PROTECTED_GROUPS):
        raise ArgumentError(
            f"{group!r} is reserved for Kubernetes' own APIs (*.k8s.io, *.kubernetes.io)",
            argument="group",
        )
    return group


def check_subdomain(name: str, *, argument: str) -> None:
    labels = name.split(".")
    if len(name) > 253 or not all(_DNS_LABEL.match(label) for label in labels):
        raise ArgumentError(
            f"{name!r} is not a DNS-1123 subdomain (dot-separated lower case labels of "
            "letters, digits and '-')",
            argument=argument,
        )


def check_kind(kind: str, group: str) -> None:
    if not _UPPER_CAMEL.match(kind):
        raise ArgumentError(
            f"{kind!r} is not UpperCamelCase (a capital letter, then letters and digits), "
            "like Widget or EtcdCluster",
            argument="kind",
        )
    plural = pluralize(kind.lower())
    if len(plural) > 63 or len(f"{plural}.{group}") > 253:
        raise ArgumentError(
            f"{kind!r} is too long: the CRD's plural ({plural}) must be at most 63 characters "
            "and its name (plural.group) at most 253",
            argument="kind",
        )


def check_api_version(api_version: str) -> None:
    if not _API_VERSION.match(api_version):
        raise ArgumentError(
            f"{api_version!r} is not a Kubernetes API version (v1, v1alpha1, v2beta3, ...)",
            argument="api_version",
        )


def check_channel(channel: str) -> None:
    if not _CHANNEL.match(channel):
        raise ArgumentError(
            f"{channel!r} is not a channel name (letters, digits, '.', '_' and '-'), like stable",
            argument="channel",
        )


def parse_install_modes(values: Sequence[str]) -> tuple[str, ...]:
    """``OwnNamespace,AllNamespaces`` (comma lists and repeats), in OLM's order."""
    given = [part.strip() for value in values for part in value.split(",") if part.strip()]
    unknown = [mode for mode in given if mode not in INSTALL_MODE_TYPES]
    if unknown or not given:
        what = f"{unknown[0]!r} is not an install mode" if unknown else "needs an install mode"
        raise ArgumentError(
            f"{what}: give some of {', '.join(INSTALL_MODE_TYPES)}", argument="install_modes"
        )
    return tuple(mode for mode in INSTALL_MODE_TYPES if mode in given)


def _image(template: str, package: str, version: str) -> str:
    """``{package}`` and ``{version}`` filled in; a valid image reference."""
    image = template.replace("{package}", package).replace("{version}", version)
    try:
        parse_reference(image)
    except OlmtoolError as exc:
        raise ArgumentError(exc.message, argument="image") from None
    return image


def _parent_domain(group: str) -> str:
    """``demo.example.com`` -> ``example.com``; a two-label group is its own domain."""
    labels = group.split(".")
    return ".".join(labels[1:]) if len(labels) > 2 else group
