"""How `make test-e2e E2E_WORKERS=2` shares the modules between its workers.

``--dist loadfile`` keeps a module on one worker (its module fixtures: one OLM engine,
one etcd operator, on that worker's session cluster). (``--dist loadgroup`` with
``xdist_group`` marks would say more, but pytest 9.2 ignores the node ids xdist 3.8
rewrites for it, and the groups silently fall apart: pytest-dev/pytest-xdist#1386.) xdist hands out the modules in
order of their number of tests; this scheduler hands out the longest first instead
(longest processing time first), so that the last module to start is a short one and the
two workers end close together. The minutes are serial ones measured on the 2-core
development machine (README, "Times"); a module not listed counts 6 s a test.
"""

from __future__ import annotations

from pathlib import PurePath

from xdist.scheduler import LoadFileScheduling

MINUTES = {
    "test_olm_upgrade_scenarios.py": 10.5,
    "test_olm_scenarios.py": 8.0,
    "test_etcd_operator.py": 8.0,
    "test_upgrade_olm.py": 7.5,
    "test_install_client.py": 3.5,
    "test_olm_hostile.py": 3.0,
    "test_cli_resilience.py": 2.0,
    "test_real_node.py": 2.0,
    "test_nodes.py": 5.0,
    "test_cluster_lifecycle.py": 1.5,
    "test_real_olm.py": 1.5,
    "test_resolver_vs_olm.py": 1.2,
    "test_images_runc.py": 1.0,
    "test_readme.py": 0.7,
}


def minutes(scope: str, tests: int) -> float:
    return MINUTES.get(PurePath(scope.split("::", 1)[0]).name, tests / 10)


class LongestModuleFirst(LoadFileScheduling):
    _sorted = False

    def _assign_work_unit(self, node) -> None:  # type: ignore[no-untyped-def]
        if not self._sorted:
            ordered = sorted(self.workqueue.items(), key=lambda kv: -minutes(kv[0], len(kv[1])))
            self.workqueue.clear()
            self.workqueue.update(ordered)
            self._sorted = True
        super()._assign_work_unit(node)
