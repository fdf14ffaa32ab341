"""Environment building and ``$(VAR)`` expansion, as kubelet does them."""

from __future__ import annotations

import base64

import pytest

from olmtool.cluster.node.env import (
    ConfigError,
    PodFacts,
    apiserver_env,
    build_env,
    expand,
    expand_all,
    field_value,
    format_map,
    service_env,
    service_links,
)

VARS = {"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the cases of k8s.io/kubernetes third_party/forked/golang/expansion
        ("$(VAR_A)", "A"),
        ("___$(VAR_B)___", "___B___"),
        ("$(VAR_A)-$(VAR_A)", "A-A"),
        ("$(VAR_A)$(VAR_B)$(VAR_C)", "ABC"),
        ("$(VAR_REF)", "$(VAR_A)"),  # no recursion
        ("foo\\$(VAR_C)bar", "foo\\Cbar"),
        ("foo\\\\$(VAR_C)bar", "foo\\\\Cbar"),
        ("$(VAR_EMPTY)", ""),
        ("$(VAR_DNE)", "$(VAR_DNE)"),  # undefined stays as written
        ("$$(VAR_A)", "$(VAR_A)"),  # escaped
        ("$$$(VAR_A)", "$A"),
        ("$$$$(VAR_A)", "$$(VAR_A)"),
        ("f000-$$VAR_A", "f000-$VAR_A"),
        ("$(VAR_A", "$(VAR_A"),  # incomplete
        ("$VAR_A", "$VAR_A"),  # not an expression
        ("$)", "$)"),
        ("$", "$"),
        ("foo$", "foo$"),
        ("$()", "$()"),
        ("$(VAR_A)$", "A$"),
        ("", ""),
    ],
)
def test_expand(text: str, expected: str) -> None:
    assert expand(text, VARS.get) == expected


def test_expand_all() -> None:
    assert expand_all(["--name=$(NAME)", "$(MISSING)"], {"NAME": "x"}) == ["--name=x", "$(MISSING)"]


POD = {
    "metadata": {
        "name": "op-0",
        "namespace": "operators",
        "uid": "u-1",
        "labels": {"app": "op", "tier": "b"},
        "annotations": {"olm.targetNamespaces": "a,b", "note": 'say "hi"'},
    },
    "spec": {"nodeName": "olmtool-node", "serviceAccountName": "op-sa"},
}


def facts() -> PodFacts:
    return PodFacts(POD, pod_ip="127.1.2.3", node_allocatable={"cpu": "2", "memory": "4Gi"})


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("metadata.name", "op-0"),
        ("metadata.namespace", "operators"),
        ("metadata.uid", "u-1"),
        ("metadata.annotations['olm.targetNamespaces']", "a,b"),
        ("metadata.labels['app']", "op"),
        ("metadata.labels['missing']", ""),
        ("spec.nodeName", "olmtool-node"),
        ("spec.serviceAccountName", "op-sa"),
        ("status.podIP", "127.1.2.3"),
        ("status.hostIP", "127.0.0.1"),
    ],
)
def test_field_refs(path: str, value: str) -> None:
    assert field_value(facts(), path) == value


def test_unknown_field_ref() -> None:
    with pytest.raises(ConfigError, match="unsupported fieldRef"):
        field_value(facts(), "spec.containers[0]")


def test_labels_file_format() -> None:
    assert format_map(POD["metadata"]["annotations"]) == (
        'note="say \\"hi\\""\nolm.targetNamespaces="a,b"'
    )


def secret(**data: str) -> dict:
    return {"data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


CONFIGMAPS = {("operators", "settings"): {"data": {"mode": "fast", "level": "3", "bad key": "x"}}}
SECRETS = {("operators", "creds"): secret(password="s3cret", user="admin")}


def env_of(container: dict, base: dict | None = None) -> dict:
    return build_env(
        container,
        facts(),
        configmap=lambda ns, name: CONFIGMAPS.get((ns, name)),
        secret=lambda ns, name: SECRETS.get((ns, name)),
        base=base,
    )


def test_env_order_and_expansion() -> None:
    container = {
        "envFrom": [
            {"configMapRef": {"name": "settings"}},
            {"secretRef": {"name": "creds"}, "prefix": "DB_"},
        ],
        "env": [
            {"name": "mode", "value": "slow"},  # env wins over envFrom
            {
                "name": "TARGETS",
                "valueFrom": {
                    "fieldRef": {"fieldPath": "metadata.annotations['olm.targetNamespaces']"}
                },
            },
            {"name": "URL", "value": "http://$(DB_user):$(DB_password)@$(HOST)/$(NOPE)"},
            {"name": "HOST", "value": "db"},  # defined after URL: not seen by it
            {"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
            {
                "name": "LEVEL",
                "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "level"}},
            },
            {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
            {"name": "FROM_BASE", "value": "$(KUBERNETES_SERVICE_HOST)"},
        ],
    }
    env = env_of(container, base={"KUBERNETES_SERVICE_HOST": "127.0.0.1"})
    assert env["mode"] == "slow"
    assert env["level"] == "3"
    assert "bad key" not in env  # invalid names from envFrom are skipped
    assert env["DB_password"] == "s3cret"
    assert env["TARGETS"] == "a,b"
    assert env["URL"] == "http://admin:s3cret@$(HOST)/$(NOPE)"
    assert env["PASS"] == "s3cret"
    assert env["LEVEL"] == "3"
    assert env["SA"] == "op-sa"
    assert env["FROM_BASE"] == "127.0.0.1"


def test_optional_references_may_be_missing() -> None:
    container = {
        "envFrom": [{"configMapRef": {"name": "absent", "optional": True}}],
        "env": [
            {
                "name": "A",
                "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k", "optional": True}},
            },
            {
                "name": "B",
                "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nope", "optional": True}},
            },
        ],
    }
    assert env_of(container) == {}


@pytest.mark.parametrize(
    ("var", "problem"),
    [
        ({"configMapKeyRef": {"name": "absent", "key": "k"}}, 'configmap "absent" not found'),
        ({"secretKeyRef": {"name": "creds", "key": "nope"}}, "couldn't find key nope"),
        ({"resourceFieldRef": {"resource": "limits.gpu"}}, "unsupported resourceFieldRef"),
    ],
)
def test_required_references_fail(var: dict, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        env_of({"env": [{"name": "X", "valueFrom": var}]})


def test_resource_field_refs() -> None:
    container = {
        "resources": {"limits": {"memory": "256Mi"}, "requests": {"cpu": "250m"}},
        "env": [
            {
                "name": "MEM",
                "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
            },
            {
                "name": "CPU_REQ",
                "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}},
            },
            {"name": "CPU_LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
        ],
    }
    env = env_of(container)
    assert env == {"MEM": "256", "CPU_REQ": "250", "CPU_LIMIT": "2"}  # no limit: node's cpu


def test_apiserver_env_points_at_the_apiserver() -> None:
    env = apiserver_env("https://127.0.0.1:6443")
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert env["KUBERNETES_SERVICE_PORT"] == "6443"
    assert env["KUBERNETES_PORT_6443_TCP"] == "tcp://127.0.0.1:6443"
    assert apiserver_env("https://localhost")["KUBERNETES_SERVICE_PORT"] == "443"


def service(namespace: str, name: str, ip: str, *ports: dict) -> dict:
    return {
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"clusterIP": ip, "ports": list(ports)},
    }


def test_service_env_is_kubelets() -> None:
    web = service(
        "shop",
        "web-front",
        "10.96.1.20",
        {"name": "http", "port": 80, "protocol": "TCP"},
        {"name": "dns-udp", "port": 53, "protocol": "UDP"},
    )
    assert service_env([web]) == {
        "WEB_FRONT_SERVICE_HOST": "10.96.1.20",
        "WEB_FRONT_SERVICE_PORT": "80",
        "WEB_FRONT_SERVICE_PORT_HTTP": "80",
        "WEB_FRONT_SERVICE_PORT_DNS_UDP": "53",
        "WEB_FRONT_PORT": "tcp://10.96.1.20:80",
        "WEB_FRONT_PORT_80_TCP": "tcp://10.96.1.20:80",
        "WEB_FRONT_PORT_80_TCP_PROTO": "tcp",
        "WEB_FRONT_PORT_80_TCP_PORT": "80",
        "WEB_FRONT_PORT_80_TCP_ADDR": "10.96.1.20",
        "WEB_FRONT_PORT_53_UDP": "udp://10.96.1.20:53",
        "WEB_FRONT_PORT_53_UDP_PROTO": "udp",
        "WEB_FRONT_PORT_53_UDP_PORT": "53",
        "WEB_FRONT_PORT_53_UDP_ADDR": "10.96.1.20",
    }
    headless = service("shop", "peers", "None", {"port": 80})
    assert service_env([headless]) == {}


def test_service_links_pick_the_namespace_and_always_the_master() -> None:
    services = [
        service("default", "kubernetes", "10.96.1.1", {"name": "https", "port": 443}),
        service("shop", "web", "10.96.1.20", {"port": 80}),
        service("other", "db", "10.96.1.30", {"port": 5432}),
    ]
    env = service_links(services, "shop")
    assert env["WEB_SERVICE_HOST"] == "10.96.1.20"
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.1.1"
    assert env["KUBERNETES_SERVICE_PORT_HTTPS"] == "443"
    assert not any(key.startswith("DB_") for key in env)
    quiet = service_links(services, "shop", enable_links=False)
    assert "WEB_SERVICE_HOST" not in quiet and quiet["KUBERNETES_SERVICE_HOST"] == "10.96.1.1"
    # a Service named like the master one in the Pod's namespace wins
    mine = service("shop", "kubernetes", "10.96.1.99", {"port": 8443})
    assert service_links([*services, mine], "shop")["KUBERNETES_SERVICE_HOST"] == "10.96.1.99"
