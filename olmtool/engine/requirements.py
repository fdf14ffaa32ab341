"""A CSV's requirements, checked as OLM does before it installs the operator.

minKubeVersion against the server; owned and required CRDs present and Established with
the version the CSV names; native APIs served; service accounts present; and every rule
of ``permissions`` / ``clusterPermissions`` granted to its service account, asked of the
apiserver itself (SubjectAccessReview), so real RBAC decides. The result is the CSV's
``requirementStatus`` list.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import semver

from olmtool.engine.apply import Discovery
from olmtool.engine.crdsafety import established
from olmtool.engine.objects import CRDS, JSON, name_of, namespace_of

if TYPE_CHECKING:
    from olmtool.kube import Kube

REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def _version(text: str) -> semver.Version | None:
    try:
        return semver.Version.parse(text.lstrip("v").split("+")[0].split("-")[0])
    except ValueError:
        return None


def _crd_requirement(kube: Kube, description: JSON) -> JSON:
    name = str(description.get("name", ""))
    entry = {
        "group": "apiextensions.k8s.io",
        "version": "v1",
        "kind": "CustomResourceDefinition",
        "name": name,
    }
    crd = kube.get_or_none(f"{CRDS}/{name}")
    if crd is None:
        return {**entry, "status": "NotPresent", "message": "CRD is not present"}
    versions = {
        v.get("name") for v in (crd.get("spec") or {}).get("versions") or [] if v.get("served")
    }
    if description.get("version") and description["version"] not in versions:
        return {
            **entry,
            "status": "PresentNotSatisfied",
            "message": f"CRD version not served: {description['version']}",
        }
    if not established(crd):
        return {
            **entry,
            "status": "NotPresent",
            "message": "CRD is present but the Established condition is False (not available)",
        }
    return {
        **entry,
        "status": "Present",
        "message": "CRD is present and Established condition is true",
    }


def _rule_checks(rule: JSON, namespace: str) -> list[JSON]:
    """The resource attributes of one policy rule (one review per group x resource x verb)."""
    if rule.get("nonResourceURLs"):
        return [
            {"nonResourceAttributes": {"path": url, "verb": verb}}
            for url in rule["nonResourceURLs"]
            for verb in rule.get("verbs") or []
        ]
    checks = []
    for group in rule.get("apiGroups") or [""]:
        for resource in rule.get("resources") or []:
            resource, _, sub = str(resource).partition("/")
            for verb in rule.get("verbs") or []:
                names = rule.get("resourceNames") or [""]
                for name in names:
                    attributes = {
                        "group": group,
                        "resource": resource,
                        "subresource": sub,
                        "verb": verb,
                        "name": name,
                    }
                    if namespace:
                        attributes["namespace"] = namespace
                    checks.append({"resourceAttributes": attributes})
    return checks


def _allowed(kube: Kube, user: str, groups: list[str], check: JSON) -> bool:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": groups, **check},
    }
    return bool(kube.create(REVIEWS, review).get("status", {}).get("allowed"))


def _account_requirement(
    kube: Kube, csv: JSON, account: str, rules: list[tuple[str, JSON]]
) -> JSON:
    namespace = namespace_of(csv)
    entry = {"group": "", "version": "v1", "kind": "ServiceAccount", "name": account}
    found = kube.get_or_none(f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}")
    if found is None:
        return {**entry, "status": "NotPresent", "message": "Service account does not exist"}
    owners = [
        r
        for r in found.get("metadata", {}).get("ownerReferences") or []
        if r.get("kind") == "ClusterServiceVersion"
    ]
    if owners and all(r.get("uid") != csv["metadata"].get("uid") for r in owners):
        # another CSV's account (its InstallPlan did not get to this CSV's RBAC steps)
        return {
            **entry,
            "status": "PresentNotSatisfied",
            "message": "Service account is owned by another ClusterServiceVersion",
        }
    user = f"system:serviceaccount:{namespace}:{account}"
    groups = [
        "system:serviceaccounts",
        f"system:serviceaccounts:{namespace}",
        "system:authenticated",
    ]
    dependents = []
    for scope, rule in rules:
        checks = _rule_checks(rule, namespace if scope == "namespaced" else "")
        ok = all(_allowed(kube, user, groups, check) for check in checks)
        dependents.append(
            {
                "group": "rbac.authorization.k8s.io",
                "version": "v1",
                "kind": "PolicyRule",
                "status": "Satisfied" if ok else "NotSatisfied",
                "message": f"{scope} rule:{json.dumps(rule, sort_keys=True, separators=(',', ':'))}",
            }
        )
    satisfied = all(d["status"] == "Satisfied" for d in dependents)
    return {
        **entry,
        "status": "Present" if satisfied else "PresentNotSatisfied",
        "message": "Service account is present"
        if satisfied
        else "Policy rule not satisfied for service account",
        "dependents": dependents,
    }


def check(
    kube: Kube, discovery: Discovery, csv: JSON, server_version: str
) -> tuple[bool, list[JSON], str]:
    """(all met, requirementStatus, message for the first unmet one)."""
    spec = csv.get("spec") or {}
    statuses: list[JSON] = []
    problems: list[str] = []
    minimum = str(spec.get("minKubeVersion") or "")
    csv_entry = {
        "group": "operators.coreos.com",
        "version": "v1alpha1",
        "kind": "ClusterServiceVersion",
        "name": name_of(csv),
    }
    wanted, have = _version(minimum), _version(server_version)
    if minimum and wanted is not None and have is not None and have < wanted:
        message = f"CSV version requirement not met: minKubeVersion ({minimum}) > server version ({server_version})"
        statuses.append({**csv_entry, "status": "PresentNotSatisfied", "message": message})
        problems.append(message)
    else:
        statuses.append(
            {
                **csv_entry,
                "status": "Present",
                "message": "CSV minKubeVersion ({}) less than server version ({})".format(
                    minimum or "none", server_version
                ),
            }
        )
    crds = spec.get("customresourcedefinitions") or {}
    for description in (crds.get("owned") or []) + (crds.get("required") or []):
        status = _crd_requirement(kube, description)
        statuses.append(status)
        if status["status"] != "Present":
            problems.append(f"{status['name']}: {status['message']}")
    for native in spec.get("nativeAPIs") or []:
        api_version = "/".join(p for p in (native.get("group"), native.get("version")) if p)
        if not discovery.served(api_version, str(native.get("kind", ""))):
            message = f"native API {native.get('kind')} {api_version} is not served"
            statuses.append({**native, "name": "", "status": "NotPresent", "message": message})
            problems.append(message)
    install = (spec.get("install") or {}).get("spec") or {}
    by_account: dict[str, list[tuple[str, JSON]]] = {}
    for key, scope in (("permissions", "namespaced"), ("clusterPermissions", "cluster")):
        for permission in install.get(key) or []:
            account = str(permission.get("serviceAccountName") or "default")
            by_account.setdefault(account, []).extend(
                (scope, r) for r in permission.get("rules") or []
            )
    for account in sorted(by_account):
        status = _account_requirement(kube, csv, account, by_account[account])
        statuses.append(status)
        if status["status"] != "Present":
            problems.append(f"service account {account}: {status['status']}")
    statuses.sort(key=lambda s: (s.get("kind", ""), s.get("name", "")))
    return not problems, statuses, "; ".join(problems)
