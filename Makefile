# make demo: the whole chain on the simulated 910B host. make test: lint, pytest, molecule.
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
# verl's tree at the guide's commit, for hosts without GitHub (the simulated host's deps stage then unpacks it):
# taken from ../shared/upstream when it is there; set GRPO_VERL_TARBALL to another copy, or to empty for git.
VERL_COMMIT := 634bd9352bfd21df3abab2dcfb86deb91f04c1ba
GRPO_VERL_TARBALL ?= $(wildcard $(abspath $(CURDIR)/../shared/upstream/verl-$(VERL_COMMIT).tar.gz))
export GRPO_VERL_TARBALL

.PHONY: venv demo test lint unit molecule bench clean-sim

venv: $(VENV)/.installed
$(VENV)/.installed: setup.py
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

demo: venv
	ansible-playbook playbooks/sim_host.yml -i inventories/sim
	ansible-playbook site.yml -i inventories/sim

test: lint unit molecule

lint: venv
	ansible-lint --profile production

unit: venv
	$(BIN)/python -m pytest -q

molecule: venv
	molecule test

bench: venv
	$(BIN)/python benchmarks/container_converge.py

clean-sim:
	-docker rm -f qwen-grpo-sim qwen-grpo-molecule
	rm -rf /var/tmp/grpo-sim
