# BCG: two commands for a new user.
#   make sim2sim   set up (first time) and run the main job: sim-to-sim validation
#   make test      set up (first time) and run the tests: pytest, then colcon build/test
# A second run reuses the virtual environment and changes nothing.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check
RUN := $(BIN)/python
STAMP_DEPLOY := $(VENV)/.bcg-deploy
STAMP_FULL := $(VENV)/.bcg-full
COLCON_WS := $(shell mktemp -u /tmp/bcg-colcon-XXXXXX)

export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST

.PHONY: setup setup-deploy sim2sim test pytest colcon-test deploy-check robot-info clean-venv

setup: $(STAMP_FULL)            ## everything: trainer, node, bridge, tests
setup-deploy: $(STAMP_DEPLOY)   ## robot PC: node, sentinel, bridge (no JAX, no torch)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP_DEPLOY): requirements/deploy.txt requirements/no-deps.txt | $(BIN)/python
	$(PIP) install -q -r requirements/deploy.txt
	$(PIP) install -q --no-deps -r requirements/no-deps.txt
	touch $@

$(STAMP_FULL): $(STAMP_DEPLOY) requirements/train.txt requirements/dev.txt
	$(PIP) install -q -r requirements/train.txt -r requirements/dev.txt
	touch $@

robot-info: $(STAMP_DEPLOY)     ## validate the robot config, build the models, print the contract
	$(RUN) -m bcg_robot.cli.robot_info

SIM2SIM_ARGS ?= --policy all --interface both --fault all --attempts 3 \
	--out runs/sim2sim/latest

sim2sim: $(STAMP_DEPLOY)        ## the main job: sim-to-sim validation of every shipped policy (models/*.onnx; else a default-pose one)
	$(RUN) -m bcg_sim_bridge.cli.sim2sim $(SIM2SIM_ARGS)

# Every test runs once: pytest takes the slow ones, colcon test the rest. The trainer's
# slow tests are compile-bound (XLA compiles on about one core), so they run in two
# processes, a module per worker (test/bcg_train/conftest.py), the G1 modules on the same
# one so two G1 compiles never share the memory. They run in the background under nice 19
# (their log follows when the foreground work is done), and the DDS scenarios, whose
# watchdogs and 50 Hz loops run on wall-clock time, at normal priority beside them: the
# scheduler gives the scenarios the CPU whenever they want it, the compiles the rest.
# With the kernel's autogroups (Debian's default), nice only ranks processes within one
# session, and the scenarios' bridge, node and sentinel each start a session of their
# own: so the compiles get a session of their own too, its autogroup at nice 19.
# AFTER_DDS (set by `make test`: colcon and the deploy check) runs in the foreground once
# the DDS scenarios are done, still beside the compiles, instead of after them.
AFTER_DDS ?=
# The tests compile at LLVM -O0: they are compile-bound (a G1 program is minutes of XLA
# compile and seconds of running), and -O0 compiled a hopper gradient test 36 % and the
# learning regression 22 % faster, though their programs run slower (docs/ci-history.md,
# session 36); colcon's tests, with a cold cache, used 28 % less CPU (session 41).
# Training and benchmarks keep XLA's default.
TEST_XLA_FLAGS := $(strip $(XLA_FLAGS) --xla_backend_optimization_level=0)
pytest: $(STAMP_FULL)           ## the slow tests (plain `pytest` runs every test in one process)
	@log=$$(mktemp /tmp/bcg-trainer-tests-XXXXXX); \
	setsid sh -c 'echo 19 > /proc/self/autogroup 2>/dev/null; exec nice -n 19 "$$@"' trainer \
		env XLA_FLAGS="$(TEST_XLA_FLAGS)" $(RUN) -m pytest test/bcg_train -m slow -n 2 --dist loadscope --no-loadscope-reorder --durations=20 > $$log 2>&1 & \
	trainer=$$!; trap 'kill $$trainer 2>/dev/null; rm -f $$log; exit 130' INT TERM; \
	echo "pytest: the trainer's slow tests run in the background (nice 19, log $$log), the DDS scenarios now"; \
	$(RUN) -m pytest -m slow --ignore=test/bcg_train; dds=$$?; \
	after=0; if [ -n "$(AFTER_DDS)" ]; then echo "pytest: now, beside the trainer's slow tests: $(AFTER_DDS)"; \
	$(AFTER_DDS); after=$$?; fi; \
	echo "pytest: the trainer's slow tests:"; tail -n +1 -f --pid=$$trainer $$log; \
	wait $$trainer; trainer_rc=$$?; rm -f $$log; \
	echo "pytest: DDS scenarios exit $$dds, AFTER_DDS exit $$after, trainer's slow tests exit $$trainer_rc"; \
	[ $$dds -eq 0 ] && [ $$after -eq 0 ] && [ $$trainer_rc -eq 0 ]

colcon-test: $(STAMP_FULL)      ## colcon build + test + test-result in a throwaway workspace
	mkdir -p $(COLCON_WS)
	cd $(COLCON_WS) && PATH=$(abspath $(BIN)):$$PATH colcon --log-base $(COLCON_WS)/log build \
		--base-paths $(CURDIR) --build-base $(COLCON_WS)/build --install-base $(COLCON_WS)/install
	cd $(COLCON_WS) && PATH=$(abspath $(BIN)):$$PATH XLA_FLAGS="$(TEST_XLA_FLAGS)" colcon --log-base $(COLCON_WS)/log test \
		--base-paths $(CURDIR) --build-base $(COLCON_WS)/build --install-base $(COLCON_WS)/install \
		--pytest-args -m "not slow"
	cd $(COLCON_WS) && PATH=$(abspath $(BIN)):$$PATH colcon test-result --test-result-base $(COLCON_WS)/build --verbose
	rm -rf $(COLCON_WS)

deploy-check:                   ## a robot-PC install (no JAX, no torch) imports every deployment module
	$(MAKE) --no-print-directory setup-deploy VENV=.venv-deploy
	.venv-deploy/bin/python -c "import importlib.util as u, sys; bad=[m for m in ('jax','torch','optax') if u.find_spec(m)]; sys.exit(f'deploy venv has {bad}' if bad else 0)"
	.venv-deploy/bin/python -m bcg_robot.deploy_check

test: $(STAMP_FULL)             ## the test command: the slow tests, with colcon and the deploy check beside the compiles
	@$(MAKE) --no-print-directory pytest AFTER_DDS="$(MAKE) --no-print-directory colcon-test deploy-check"

clean-venv:
	rm -rf $(VENV)
