"""Image references parse like docker parses them, and print back to the same reference."""

from __future__ import annotations

import pytest

from olmtool.errors import InputError
from olmtool.images import Reference, is_loopback, parse_reference

DIGEST = "sha256:" + "ab" * 32

VALID = [
    ("busybox", Reference("docker.io", "library/busybox", "latest")),
    ("busybox:1.36", Reference("docker.io", "library/busybox", "1.36")),
    ("library/busybox", Reference("docker.io", "library/busybox", "latest")),
    ("docker.io/busybox", Reference("docker.io", "library/busybox", "latest")),
    ("index.docker.io/library/busybox", Reference("docker.io", "library/busybox", "latest")),
    ("etcd/bundle:0.1.0", Reference("docker.io", "etcd/bundle", "0.1.0")),
    ("quay.io/operatorhubio/etcd:v0.9.4", Reference("quay.io", "operatorhubio/etcd", "v0.9.4")),
    ("localhost/foo", Reference("localhost", "foo", "latest")),
    ("localhost:5000/foo/bar:1", Reference("localhost:5000", "foo/bar", "1")),
    ("127.0.0.1:5000/etcd/bundle:0.1.0", Reference("127.0.0.1:5000", "etcd/bundle", "0.1.0")),
    ("[::1]:5000/foo:1", Reference("[::1]:5000", "foo", "1")),
    ("Registry/foo", Reference("Registry", "foo", "latest")),  # upper case: a host, as in docker
    ("r.example.com/a/b/c@" + DIGEST, Reference("r.example.com", "a/b/c", None, DIGEST)),
    ("foo:1@" + DIGEST, Reference("docker.io", "library/foo", "1", DIGEST)),
    ("a_b/c__d/e-f--g.h:T_1.x-y", Reference("docker.io", "a_b/c__d/e-f--g.h", "T_1.x-y")),
    # runs of dashes are one separator in the grammar: an eclipse-che-style name
    (
        "quay.io/eclipse/che--traefik@" + DIGEST,
        Reference("quay.io", "eclipse/che--traefik", None, DIGEST),
    ),
    ("quay.io/a/b---c:1", Reference("quay.io", "a/b---c", "1")),
    ("r.io/a@sha512:" + "0f" * 64, Reference("r.io", "a", None, "sha512:" + "0f" * 64)),
    ("r.io/a@sha384:" + "0f" * 48, Reference("r.io", "a", None, "sha384:" + "0f" * 48)),
]

INVALID = [
    ("", "empty"),
    ("Foo//bar", "empty path component"),
    ("UPPER", "lower case"),
    ("foo:", "bad tag"),
    ("foo:-x", "bad tag"),
    ("foo:bad tag", "bad tag"),
    ("foo@sha256:abc", "bad digest"),
    ("foo@sha256:" + "AB" * 32, "64 lower-case hex"),
    ("foo@sha256:" + "ab" * 33, "64 lower-case hex"),
    ("foo@sha512:" + "ab" * 32, "128 lower-case hex"),
    ("foo@md5:" + "ab" * 16, "unsupported digest algorithm"),
    ("foo:t\u00e9", "bad tag"),  # Go's \w is ASCII
    ("ab" * 32, "image ID"),
    ("a___b", "bad path component"),
    ("a-_b", "bad path component"),
    ("a.-b", "bad path component"),
    ("-foo", "bad path component"),
    ("foo/", "empty path component"),
    ("a..b", "bad path component"),
    ("exa_mple.com/foo", "bad registry"),
    ("docker.io/" + "a" * 260 + "/b", "longer than 255"),
]


@pytest.mark.parametrize(("text", "expected"), VALID, ids=[t for t, _ in VALID])
def test_parse(text: str, expected: Reference) -> None:
    assert parse_reference(text) == expected


@pytest.mark.parametrize(("text", "expected"), VALID, ids=[t for t, _ in VALID])
def test_str_round_trips(text: str, expected: Reference) -> None:
    assert parse_reference(str(expected)) == expected


def test_str_is_fully_qualified() -> None:
    assert str(parse_reference("busybox")) == "docker.io/library/busybox:latest"
    pinned = f"127.0.0.1:5000/etcd/bundle:0.1.0@{DIGEST}"
    assert str(parse_reference(pinned)) == pinned


@pytest.mark.parametrize(("text", "why"), INVALID, ids=[t[:30] or "empty" for t, _ in INVALID])
def test_invalid(text: str, why: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_reference(text)
    message = str(caught.value)
    assert message.startswith(f'invalid image reference "{text}": ')
    assert why in message
    assert "\n" not in message


def test_the_documented_message() -> None:
    with pytest.raises(InputError, match=r'^invalid image reference "Foo//bar": empty path'):
        parse_reference("Foo//bar")


def test_api_host() -> None:
    assert parse_reference("busybox").api_host == "registry-1.docker.io"
    assert parse_reference("quay.io/a/b").api_host == "quay.io"
    assert parse_reference("localhost:5000/a").api_host == "localhost:5000"


def test_identifier_prefers_the_digest() -> None:
    assert parse_reference("foo:1").identifier == "1"
    assert parse_reference(f"foo:1@{DIGEST}").identifier == DIGEST
    assert parse_reference("foo").name == "docker.io/library/foo"


@pytest.mark.parametrize(
    ("registry", "loopback"),
    [
        ("localhost", True),
        ("LOCALHOST:5000", True),
        ("127.0.0.1", True),
        ("127.1.2.3:80", True),
        ("::1", True),
        ("[::1]:5000", True),
        ("[::1]", True),
        ("10.0.0.1:5000", False),
        ("example.com", False),
        ("localhost.example.com", False),
        ("127.0.0.1.nip.io:5000", False),
        ("docker.io", False),
        ("[::2]:5000", False),
    ],
)
def test_is_loopback(registry: str, loopback: bool) -> None:
    assert is_loopback(registry) is loopback


def test_the_common_form_check_accepts_only_what_parses() -> None:
    """``is_common_reference`` is a fast subset: never True for a reference the parser
    refuses, and True for the catalog's usual digest and tag references."""
    from olmtool.images.reference import is_common_reference

    for text, _ in INVALID:
        assert not is_common_reference(text), text
    for text, _ in VALID:
        if is_common_reference(text):
            parse_reference(text)
    digest = "sha256:" + "a" * 64
    for text in (
        f"quay.io/org/op-bundle@{digest}",
        f"registry.example.com:5000/a/b-c/d_e:v1.2.3@{digest}",
        "gcr.io/etcd-development/etcd:v3.5.0",
    ):
        assert is_common_reference(text), text
        parse_reference(text)
    for text in ("etcd:v3", "Quay.io/x/y", "quay.io/x/Y", "quay.io/x@sha256:abc", "x" * 300):
        assert not is_common_reference(text), text
