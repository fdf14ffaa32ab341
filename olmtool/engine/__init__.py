"""olmtool's OLM v0 engine: the controllers of OLM's catalog and olm operators, in
Python, for the local cluster (``olmtool cluster up`` starts it as its own process).

    Engine(Kube(kubeconfig), global_namespace="olm").run()   # until engine.stop is set

:mod:`~olmtool.engine.catalogs` connects CatalogSources, :mod:`~olmtool.engine.subscriptions`
resolves namespaces into InstallPlans (with :mod:`olmtool.olm.resolver`),
:mod:`~olmtool.engine.installplans` executes them (:mod:`~olmtool.engine.steps`,
:mod:`~olmtool.engine.crdsafety`), :mod:`~olmtool.engine.csvs` runs the CSV state machine
(:mod:`~olmtool.engine.requirements`, :mod:`~olmtool.engine.deployments`,
:mod:`~olmtool.engine.targets`, :mod:`~olmtool.engine.groups`), and
:mod:`~olmtool.engine.loop` ties them into level-triggered rounds.
"""

from olmtool.engine.loop import Engine

__all__ = ["Engine"]
