# make demo: the whole chain on the simulated 910B host. make test: lint, pytest, molecule. make check: lint and
# every test that needs neither Docker nor the network (tests/unit), in a few minutes.
# A fresh Debian/Ubuntu machine first needs: sudo sh files/prepare-host.sh (Docker engine, debootstrap, make, venv).
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
# verl's tree at the guide's commit, for hosts without GitHub (the simulated host's deps stage then unpacks it):
# taken from ../shared/upstream when it is there; set GRPO_VERL_TARBALL to another copy, or to empty for git.
VERL_COMMIT := 634bd9352bfd21df3abab2dcfb86deb91f04c1ba
GRPO_VERL_TARBALL ?= $(wildcard $(abspath $(CURDIR)/../shared/upstream/verl-$(VERL_COMMIT).tar.gz))
export GRPO_VERL_TARBALL

.PHONY: venv test-venv demo demo-multi demo-offline test beside check lint unit integration sim-image molecule bench clean-sim

# The controller: ansible-core, ansible (community.docker), requests and this package; what `make demo` and real
# use need. pip's own output shows the progress. ansible-core 2.19 needs Python 3.11 or newer: an older python3 (the
# usual 910B systems ship 3.7 to 3.10) is refused before anything is made, naming the README's way out; PYTHON names
# another one (make venv PYTHON=/opt/python3.11/bin/python3).
PYTHON ?= python3
CONTROLLER_PYTHON := 3.11
venv: $(VENV)/.installed
$(VENV)/.installed: setup.py
	@py=$(PYTHON); test -x $(BIN)/python && py=$(BIN)/python; \
	found=$$($$py -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null); \
	if [ -z "$$found" ]; then \
	  echo "make venv: $$py does not run; the controller needs Python >= $(CONTROLLER_PYTHON) (ansible-core 2.19)." \
	       "See README.md, \"What the controller needs\"." >&2; exit 1; \
	elif ! printf '%s\n%s\n' $(CONTROLLER_PYTHON) "$$found" | sort -V -C; then \
	  echo "make venv: $$py is Python $$found; the controller needs Python >= $(CONTROLLER_PYTHON) (ansible-core 2.19)." \
	       "Run the controller on another machine over SSH, or install a Python $(CONTROLLER_PYTHON) and run" \
	       "make venv PYTHON=/path/to/python3.11: README.md, \"What the controller needs\". Nothing was made." >&2; \
	  exit 1; \
	fi
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "== $(VENV): the controller's packages (ansible-core, ansible, requests): about 100 MB, a minute or two"
	$(BIN)/pip install --disable-pip-version-check --progress-bar on -e .
	touch $@

# The tests' packages on top (torch, transformers, datasets, molecule, ansible-lint, ...), and the files the unit tests
# read from the registry: only `make test` and `make check` need them.
test-venv: $(VENV)/.installed-test
$(VENV)/.installed-test: $(VENV)/.installed setup.py
	@echo "== $(VENV): the tests' packages (torch, transformers, datasets, molecule, ansible-lint, ...): about 1.5 GB"
	$(BIN)/pip install --disable-pip-version-check --progress-bar on -e '.[test]'
	@echo "== .cache/tests: the upstream wheels and sdists the unit tests read (about 340 MB), so they need no network"
	$(BIN)/python tests/fill_cache.py
	touch $@

# The sim host (image, device nodes, npu-smi), then its tiny model and problems (built with the training environment's
# Python once the container and deps stages made it: sim_sources.yml runs them), then the whole chain. As on a 910B the
# chain is back once the run's first step is logged and the eval stage says the run is going; the demo waits for the
# run's end (sim_wait.yml) and runs the eval stage again for the report.
demo: venv
	ansible-playbook playbooks/sim_host.yml -i inventories/sim
	ansible-playbook playbooks/sim_sources.yml -i inventories/sim -e sim_sources_alone=true
	ansible-playbook site.yml -i inventories/sim
	ansible-playbook playbooks/sim_wait.yml -i inventories/sim
	ansible-playbook site.yml -i inventories/sim --tags eval
	ansible-playbook playbooks/sim_seed.yml -i inventories/sim

# Two simulated hosts as one Ray cluster (inventories/sim-multi): a real 2-node run (the eval is the single host's).
demo-multi: venv
	ansible-playbook playbooks/sim_host.yml -i inventories/sim-multi
	ansible-playbook playbooks/sim_sources.yml -i inventories/sim-multi -e sim_sources_alone=true
	ansible-playbook site.yml -i inventories/sim-multi --skip-tags eval
	ansible-playbook playbooks/sim_wait.yml -i inventories/sim-multi

# The simulated host with no network (inventories/sim-offline), after make demo: an offline bundle exported on this
# machine (--tags export, from the demo's sources and download cache), then the whole chain from it in a container on
# Docker's none network, as a 910B with no link runs it (docs/offline.md).
demo-offline: venv
	ansible-playbook site.yml -i inventories/sim-offline --tags export
	ansible-playbook playbooks/sim_host.yml -i inventories/sim-offline
	ansible-playbook site.yml -i inventories/sim-offline
	ansible-playbook playbooks/sim_wait.yml -i inventories/sim-offline
	ansible-playbook site.yml -i inventories/sim-offline --tags eval

# make test: the sim image, then molecule's scenarios (make molecule: multinode beside default's verify) with the other
# tests beside them (make beside: the lint and the unit tests, then the integration tests). Molecule waits mostly on
# training, pip and Ansible's own tasks, the others on Python and Docker, so on two cores they overlap. Their output
# goes to .test-logs/{lint,unit,integration}.log and is printed when molecule is done; they hold ENGINE_LOCK (shared)
# while they run, and molecule's Docker-engine restart drill takes it exclusively (it waits for them, not a clock).
# They run niced: molecule's default scenario is the critical path, so its training and pip get the cores first.
ENGINE_LOCK ?= /var/tmp/grpo-engine.lock
export GRPO_ENGINE_LOCK := $(ENGINE_LOCK)
test: test-venv
	@$(MAKE) --no-print-directory sim-image
	@mkdir -p .test-logs
	@echo "== lint and the unit tests, then the integration tests, beside molecule (printed when molecule is done)"
	@set +e; exec 9>"$(ENGINE_LOCK)"; flock -s 9; \
	$(MAKE) --no-print-directory beside >.test-logs/beside.log 2>&1 & bpid=$$!; \
	exec 9>&-; \
	$(MAKE) --no-print-directory molecule; mrc=$$?; \
	wait $$bpid; brc=$$?; \
	echo "== beside molecule: the end of each log (.test-logs/lint.log, unit.log, integration.log)"; \
	tail -n 3 .test-logs/lint.log; tail -n 14 .test-logs/unit.log; tail -n 30 .test-logs/integration.log; \
	cat .test-logs/beside.log; \
	echo "== molecule: exit status $$mrc; beside it (lint, unit, integration): exit status $$brc"; \
	test $$mrc -eq 0 && test $$brc -eq 0

# What make test runs beside molecule: the lint, the unit tests on one process, then the integration tests; one line
# per part with its exit status and seconds. One part at a time on one core, niced (renice of this recipe's shell,
# which its parts inherit): molecule is the critical path (about 30 minutes against their 15), and the stack's
# install in its converge is disk-bound, so the fewer processes beside it, the sooner it ends.
beside: test-venv
	@set +e; renice -n 10 -p $$$$ >/dev/null; mkdir -p .test-logs; began=$$(date +%s); \
	$(MAKE) --no-print-directory lint >.test-logs/lint.log 2>&1; lrc=$$?; \
	$(MAKE) --no-print-directory unit UNIT_PROCS=1 >.test-logs/unit.log 2>&1; urc=$$?; mid=$$(date +%s); \
	echo "== beside: lint exit status $$lrc, unit tests exit status $$urc, $$((mid - began)) s"; \
	$(MAKE) --no-print-directory integration >.test-logs/integration.log 2>&1; irc=$$?; \
	echo "== beside: integration tests exit status $$irc, $$(( $$(date +%s) - mid )) s"; \
	test $$lrc -eq 0 && test $$urc -eq 0 && test $$irc -eq 0

# The simulated host's image and folders, built once before the tests that use them run side by side.
sim-image: test-venv
	ansible-playbook playbooks/sim_host.yml -i inventories/sim

# Before a commit: the lint beside every test that needs neither Docker nor the network (tests/unit, on both cores:
# pytest-xdist gives each process its own session fixtures and temporary folders; worksteal keeps both busy to the
# end). The lint waits mostly on one core, so the three share two; each one's output is printed when it is done.
# About 3 minutes.
check: test-venv
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint unit

lint: test-venv
	ansible-lint --profile production

# pytest in two folders (pytest.ini's marks say which, and a test in the wrong one fails collection): tests/unit,
# every test that needs neither Docker nor the network; tests/integration, the stages against the simulated host
# (Docker, root) and pip against the package index. Each ends with its ten slowest tests, where a budget goes first.
UNIT_PROCS ?= 2
unit: test-venv
	$(BIN)/python -m pytest -q --durations=10 -n $(UNIT_PROCS) --dist worksteal tests/unit

integration: test-venv
	$(BIN)/python -m pytest -q --durations=10 tests/integration

# Every scenario, each in molecule's own test sequence (destroy, syntax, create, converge, idempotence, verify,
# destroy): default (one simulated host, the whole chain), and multinode (two hosts as one Ray cluster) then offline
# (the chain from an offline bundle on a host with no network) beside default's idempotence and verify, once default's
# converge has kept the stack's seed multinode's two nodes start from and filled the download cache the export takes
# its wheels from. Default's verify
# leaves about 45 % of the two cores idle (Ansible's tasks and waits between the runs), which multinode's runs use, so
# both end sooner than one after the other (39.5 min warm before, 31.4 to 32.0 after). Multinode runs niced as make
# beside does, as default's chain is the longest path; nice shares out only the CPU, though: at nice 5 or 10 alike,
# default's verify took about 1,400 s beside the others against 866 s alone. Their output is in
# .test-logs/molecule-multinode.log and molecule-offline.log (their ends printed when default is done); they hold
# ENGINE_LOCK shared: the engine-restart drill waits for them to end.
# Default's last destroy runs whatever failed before it.
molecule: test-venv
	@set +e; mkdir -p .test-logs; rc=0; mpid=; \
	for step in destroy syntax create converge; do molecule $$step -s default || { rc=1; break; }; done; \
	if [ $$rc -eq 0 ]; then \
	  echo "== molecule multinode, then offline: beside default's idempotence and verify" \
	       "(.test-logs/molecule-multinode.log, molecule-offline.log)"; \
	  ( exec 9>"$(ENGINE_LOCK)"; flock -s 9; \
	    nice -n 10 molecule test -s multinode >.test-logs/molecule-multinode.log 2>&1; m=$$?; \
	    nice -n 10 molecule test -s offline >.test-logs/molecule-offline.log 2>&1; o=$$?; \
	    exit $$((m | o)) ) & mpid=$$!; \
	  for step in idempotence verify; do molecule $$step -s default || { rc=1; break; }; done; \
	fi; \
	molecule destroy -s default || rc=1; \
	if [ -n "$$mpid" ]; then \
	  wait $$mpid; mrc=$$?; echo "== molecule multinode and offline: the end of their logs, exit status $$mrc"; \
	  tail -n 40 .test-logs/molecule-multinode.log; tail -n 40 .test-logs/molecule-offline.log; \
	  test $$mrc -eq 0 || rc=1; \
	fi; \
	exit $$rc

bench: test-venv
	$(BIN)/python benchmarks/container_converge.py

clean-sim:
	-docker rm -f qwen-grpo-sim qwen-grpo-molecule qwen-grpo-sim-a qwen-grpo-sim-b qwen-grpo-mol-sim-a qwen-grpo-mol-sim-b \
	  qwen-grpo-sim-offline qwen-grpo-mol-offline
	-docker network rm grpo-sim-net grpo-sim-mol-net
	rm -rf /var/tmp/grpo-sim
