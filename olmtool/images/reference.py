"""Image references (``registry/repository:tag@digest``) parsed the way docker does.

>>> str(parse_reference("busybox"))
'docker.io/library/busybox:latest'
>>> parse_reference("127.0.0.1:5000/etcd/bundle:0.1.0").registry
'127.0.0.1:5000'
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from olmtool.errors import InputError

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"
DEFAULT_TAG = "latest"

# The grammar of github.com/distribution/reference (regexp.go), one expression per part.
# re.ASCII: Go's \w is [0-9A-Za-z_], Python's would take any letter.
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = re.compile(
    rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
)
# alphanumeric (separator alphanumeric)*, separator = [._] | __ | -+ (so "che--traefik").
_PATH_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_TAG = re.compile(r"[\w][\w.-]{0,127}", re.ASCII)
_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}")
# go-digest then validates the algorithms it knows: lower-case hex of the hash's size.
_DIGEST_HEX = {"sha256": 64, "sha384": 96, "sha512": 128}
_HEX = re.compile(r"[0-9a-f]+")
_IDENTIFIER = re.compile(r"[a-f0-9]{64}")  # ParseNormalizedNamed refuses such names
_MAX_NAME = 255


@dataclass(frozen=True)
class Reference:
    """A normalised image reference; ``str()`` gives a form ``parse_reference`` reads back."""

    registry: str
    repository: str
    tag: str | None = DEFAULT_TAG
    digest: str | None = None

    @property
    def name(self) -> str:
        """``registry/repository``: the reference without tag or digest."""
        return f"{self.registry}/{self.repository}"

    @property
    def api_host(self) -> str:
        """The host serving the distribution API; Docker Hub's differs from its name."""
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    @property
    def identifier(self) -> str:
        """What goes after ``/manifests/`` to fetch this image: the digest when pinned."""
        return self.digest or self.tag or DEFAULT_TAG

    def __str__(self) -> str:
        text = self.name
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


# A subset of the grammar, in one expression: a registry with a dot (so it is a host),
# lower-case path components, a tag, a sha256 digest. What it matches parses; what it
# does not match goes through parse_reference, which says why (or accepts it after all).
_COMMON = re.compile(
    r"[a-z0-9]+(?:-[a-z0-9]+)*(?:\.[a-z0-9]+(?:-[a-z0-9]+)*)+(?::[0-9]+)?"
    r"(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)+"
    r"(?::\w[\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?",
    re.ASCII,
)


def is_common_reference(text: str) -> bool:
    """Whether ``text`` is a reference of the common form (``quay.io/org/name:tag@sha256:
    ...``): one regular expression, for checks of many references; False says nothing."""
    return len(text) <= _MAX_NAME and _COMMON.fullmatch(text) is not None


def parse_reference(text: str) -> Reference:
    """Parse ``text`` with docker's defaults: Docker Hub, ``library/`` and ``:latest``.

    The first path component names a registry only when it looks like a host (has a
    ``.`` or ``:``, is ``localhost`` or has upper case), so ``etcd/bundle`` is on Docker Hub.
    """
    if not text:
        raise _invalid(text, "empty")
    if _IDENTIFIER.fullmatch(text):
        raise _invalid(text, "a 64-character hex string is an image ID, not a name")
    rest, digest = _split_digest(text)
    rest, tag = _split_tag(text, rest)
    registry, repository = _split_registry(rest)
    if not _DOMAIN.fullmatch(registry):
        raise _invalid(text, f"bad registry {registry!r}")
    for component in repository.split("/"):
        if not _PATH_COMPONENT.fullmatch(component):
            raise _invalid(text, _component_problem(component))
    if len(rest) > _MAX_NAME:
        raise _invalid(text, f"name longer than {_MAX_NAME} characters")
    if tag is None and digest is None:
        tag = DEFAULT_TAG
    return Reference(registry, repository, tag, digest)


IMAGE_PLACEHOLDERS = ("package", "version")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def expand_image(pattern: str, *, package: str, version: str) -> str:
    """``pattern`` with ``{package}`` and ``{version}`` filled in: the one rule for every
    image olmtool.yaml or a flag names (``deployment.image``, ``relatedImages``,
    ``containerImage``, a release's ``image``, ``bundle build --image``, ``bundle image
    --image``, a catalog package's ``image``), so one line serves every release.

    >>> expand_image("quay.io/x/foo:v{version}", package="foo", version="0.3.0")
    'quay.io/x/foo:v0.3.0'

    Any other ``{...}`` is an :class:`InputError` (a typo would otherwise be pushed).
    """
    values = {"package": package, "version": version}

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            known = ", ".join(f"{{{p}}}" for p in IMAGE_PLACEHOLDERS)
            raise InputError(f"{pattern!r}: unknown placeholder {{{name}}} (known: {known})")
        return values[name]

    return _PLACEHOLDER.sub(fill, pattern)


def is_loopback(registry: str) -> bool:
    """Whether ``registry`` (``host[:port]``) is this machine: localhost, 127/8 or ::1."""
    host = registry
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _split_digest(text: str) -> tuple[str, str | None]:
    rest, at, digest = text.partition("@")
    if not at:
        return text, None
    if not _DIGEST.fullmatch(digest):
        raise _invalid(text, f"bad digest {digest!r}")
    algorithm, _, encoded = digest.partition(":")
    size = _DIGEST_HEX.get(algorithm)
    if size is None:
        raise _invalid(text, f"unsupported digest algorithm {algorithm!r}")
    if len(encoded) != size or not _HEX.fullmatch(encoded):
        raise _invalid(text, f"a {algorithm} digest is {size} lower-case hex digits")
    return rest, digest


def _split_tag(text: str, rest: str) -> tuple[str, str | None]:
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon <= slash:
        return rest, None
    tag = rest[colon + 1 :]
    if not _TAG.fullmatch(tag):
        raise _invalid(text, f"bad tag {tag!r}")
    return rest[:colon], tag


def _split_registry(name: str) -> tuple[str, str]:
    first, slash, remainder = name.partition("/")
    is_host = any(c in first for c in ".:") or first == "localhost" or first != first.lower()
    if not slash or not is_host:
        registry, repository = DOCKER_HUB, name
    else:
        registry, repository = first, remainder
    if registry == "index.docker.io":
        registry = DOCKER_HUB
    if registry == DOCKER_HUB and "/" not in repository:
        repository = f"library/{repository}"
    return registry, repository


def _component_problem(component: str) -> str:
    if not component:
        return "empty path component"
    if component != component.lower():
        return "repository names must be lower case"
    return f"bad path component {component!r}"


def _invalid(text: str, why: str) -> InputError:
    return InputError(f'invalid image reference "{text}": {why}')
