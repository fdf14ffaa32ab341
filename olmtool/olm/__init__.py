"""olmtool's OLM v0 engine: the ``operators.coreos.com`` API on the local cluster, catalog
sources, Subscription resolution, InstallPlans and the CSV state machine, written to
behave like OLM v0 so the same catalogs, OperatorGroups and Subscriptions work unchanged
on real OLM (see ``docs/architecture.md``)."""
