# olmtool developer entry points. `make demo` and `make test` work on a fresh machine:
# they create .venv and install olmtool with its test dependencies first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTEST_WORKERS ?= auto

.PHONY: help install tools assets e2e-assets demo generate lock images proto bench bench-edges bench-bundle bench-image-render bench-cluster bench-etcd bench-images bench-upgrade lint format test test-unit test-e2e clean

help:
	@echo "make install    .venv with olmtool and its test tools (about 1 min); then"
	@echo "                source .venv/bin/activate, or run .venv/bin/olmtool"
	@echo "make demo       install, then the whole job on the etcd operator in this repo:"
	@echo "                CRDs generated and validated, bundle built and validated with"
	@echo "                every suite, catalog published and validated (seconds once installed)"
	@echo "make tools      apt-get docker-registry, skopeo, etcd, promtool, runc, umoci, containerd,"
	@echo "                CNI plugins, iptables, conntrack, dnsmasq (the local cluster's registry"
	@echo "                and node, and the tests' tools; root or sudo)"
	@echo "make assets     find or build Kubernetes 1.20 (control plane and node) for the local"
	@echo "                cluster (cached in ~/.cache/olmtool/assets: instant; a cold build from"
	@echo "                Debian's source package about 8 min on 2 cores, a line per stage)"
	@echo "make test       install, lint, assets, generated-file checks, unit then e2e tests"
	@echo "make test-unit  fast loop: unit tests only"
	@echo "make test-e2e   tests against real clusters, two workers with a cluster each"
	@echo "                (E2E_WORKERS=0: serially; make assets first, or it builds)"
	@echo "make lint       ruff, import-linter (the layer and face contracts in pyproject.toml),"
	@echo "                registry API stubs up to date"
	@echo "make generate   regenerate CRDs, the bundle and catalog/ from their sources"
	@echo "make lock       re-resolve operator/requirements.lock from requirements.in (pip)"
	@echo "make images     build the operator image and push every bundle tag to 127.0.0.1:5000"
	@echo "make bench      catalog benchmarks up to 20,000 bundles, 200 bundle images, CRD edge checks"
	@echo "make bench-edges    upgrade edges of 2,000/10,000-entry channels with skips/skipRange"
	@echo "make bench-image-render  render 200 bundle images from a loopback registry (ratio to opm)"
	@echo "make bench-bundle   render/validate 1-5 MB bundles (ratio to ../shared/peers/opm if present)"
	@echo "make bench-cluster  local cluster start-up and Deployment-to-Ready times"
	@echo "make bench-etcd     etcd operator on 3 nodes: create (TLS too), scale, recovery, upgrade,"
	@echo "                    certificate renewal, node loss and disaster recovery times"
	@echo "make bench-images   the Python base's cold/warm build time, every image's size"
	@echo "make bench-upgrade  install and per-hop seconds of every release upgraded through OLM"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,operator]'
	@touch $@

install: $(STAMP)

# Debian's docker-registry (a loopback OCI registry), skopeo (an independent client),
# etcd-server (etcd 3.4: the control plane's store, and what the node agent runs for
# quay.io/coreos/etcd:v3.4 images), runc and umoci (images run under a real OCI runtime,
# unpacked by an independent tool); containerd, the CNI plugins, iptables, conntrack and
# dnsmasq for a real node (cluster up --kubelet). Each entry is command:package.
TOOLS := docker-registry:docker-registry skopeo:skopeo etcd:etcd-server promtool:prometheus \
         runc:runc umoci:umoci containerd:containerd /usr/lib/cni/bridge:containernetworking-plugins \
         iptables:iptables conntrack:conntrack dnsmasq:dnsmasq-base
SUDO  := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
tools:
	@missing=""; for t in $(TOOLS); do command -v $${t%%:*} >/dev/null || missing="$$missing $${t#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq$$missing >/dev/null; \
	fi

# The control plane (kube-apiserver, controllers, scheduler, etcd, kubectl 1.20): found in
# KUBEBUILDER_ASSETS or ~/.cache/olmtool/assets, else built, with a line per build stage.
assets: install
	$(BIN)/olmtool cluster assets

# The same before the e2e tests run, so a build shows here rather than inside pytest;
# outside CI, where it cannot be built (not Debian, no root/sudo), the e2e tests skip.
e2e-assets: install
	$(BIN)/olmtool cluster assets --optional

demo: install
	$(BIN)/olmtool crd generate
	$(BIN)/olmtool crd validate --strict operator/config/crd
	$(BIN)/olmtool bundle build
	$(BIN)/olmtool bundle validate bundle/etcd-operator/0.4.0 --strict --select all
	$(BIN)/olmtool catalog publish
	$(BIN)/olmtool catalog validate catalog --strict

generate: install
	$(BIN)/olmtool crd generate
	$(BIN)/olmtool bundle build
	$(BIN)/olmtool catalog publish

# The operator image's pins: pip resolves operator/requirements.in for CPython 3.11.
lock: install
	$(BIN)/olmtool image lock

# Every tag the bundles reference (localhost:5000/olmtool/etcd-operator:<version>), pushed
# to the default local cluster's registry (`olmtool cluster up` starts it on 127.0.0.1:5000).
REGISTRY ?= 127.0.0.1:5000
images: install
	$(BIN)/olmtool image build --bundle-tags --push --registry $(REGISTRY)

bench: install
	$(BIN)/python benchmarks/catalog_bench.py
	$(BIN)/python benchmarks/bench_image_render.py
	$(BIN)/python benchmarks/bench_crd_upgrade.py

bench-image-render: install
	$(BIN)/python benchmarks/bench_image_render.py

bench-edges: install
	$(BIN)/python benchmarks/bench_upgrade_edges.py

bench-bundle: install
	$(BIN)/python benchmarks/bench_bundle_render.py

bench-cluster: install
	$(BIN)/python benchmarks/cluster_bench.py

bench-etcd: install
	$(BIN)/python benchmarks/etcd_operator_bench.py

bench-images: install
	$(BIN)/python benchmarks/bench_images.py

bench-upgrade: install
	$(BIN)/python benchmarks/bench_upgrade_hop.py

# The registry API stubs are generated from olmtool/proto/registry.proto.
proto: install
	$(BIN)/python -m olmtool.proto.generate

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m olmtool.proto.generate --check

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

test-unit: install
	$(BIN)/pytest -m "not e2e" -n $(PYTEST_WORKERS) -q

# Two workers, each with a session cluster of its own; a module stays on one worker, the
# longest first (tests/e2e/schedule.py). E2E_WORKERS=0 runs them serially (twice as long).
E2E_WORKERS ?= 2
test-e2e: e2e-assets
	$(BIN)/pytest -m e2e -q -n $(E2E_WORKERS) --dist loadfile --durations=40

test: lint e2e-assets
	$(BIN)/olmtool crd generate --check
	$(BIN)/olmtool bundle build --check
	$(BIN)/olmtool catalog publish --check
	$(BIN)/olmtool catalog validate catalog --strict
	$(BIN)/olmtool test upgrade --catalog catalog --package etcd-operator
	$(MAKE) test-unit
	$(MAKE) test-e2e

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
