# Two commands for a fresh Linux machine with Python 3.11 and no ROS:
#   make demo   -- the main job (simulated Panda, iTaSC node, targets; bag + plots)
#   make test   -- the whole test suite
# Both create .venv and install everything from PyPI (real rclpy + Fast DDS wheels).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# pytest-xdist workers of make test: one per CPU, at most 4 (each test starts DDS processes)
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n > 4 ? 4 : n )))

.PHONY: demo test lint bench peers limit-peers colcon-check clean

$(STAMP): setup.py setup.cfg pyproject.toml package.xml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[ros,test,bench]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/itasc-demo

# Three groups of tests, after every compiled kernel is compiled once (or found in the cache),
# in two processes (else each test process and node started on a fresh clone compiles them on
# its own, beside the others):
#  1. the DDS tests (marker "dds": a node and a simulated robot as processes) on one
#     pytest-xdist worker per CPU, a test file per worker (a module's node process is shared by
#     its tests);
#  2. the tests that measure wall-clock timing (over DDS, a control loop's, a solver's budget) or
#     sub-millimetre tracking over DDS (marker "serial"), one at a time, and beside them
#  3. the tests without DDS (the core, the tools offline, the console scripts' mistakes), on one
#     worker per CPU (a worker out of tests takes some of the other's), under SCHED_IDLE
#     (chrt -i; nice 19 where chrt is missing): they take the CPU time the serial tests leave,
#     and a serial test's node, simulated robot and burners take a CPU back from them at once
#     when they wake. Their report is printed when both are done (.pytest_cache/compute.log).
# A test that fails in a group is run again alone (--lf), after the groups, and it must pass
# there; the group's first report stays in the log above (most tests were written for one
# process: a starved test process misses its own timing; a real regression fails both runs).
# Each group ends with its ten slowest tests (keep the whole under ~12 minutes).
PYTEST  := $(PY) -m pytest
COMPUTE := -m "not dds and not serial" -o cache_dir=.pytest_cache/compute
IDLE    := $(shell chrt -i 0 true >/dev/null 2>&1 && echo "chrt -i 0" || echo "nice -n 19")
test: $(STAMP) peers
	$(PY) -m itasc_ros.tools.warm_cache
	$(PYTEST) -n $(TEST_WORKERS) --dist loadfile -m "dds and not serial" --durations=10 \
	  || $(PYTEST) --lf --lfnf=none -m "dds and not serial"
	@mkdir -p .pytest_cache; rm -f .pytest_cache/compute.status
	@echo "tests without DDS beside ($(IDLE)): .pytest_cache/compute.log"
	@{ $(IDLE) $(PYTEST) -n $(TEST_WORKERS) --dist worksteal $(COMPUTE) --durations=10 \
	     > .pytest_cache/compute.log 2>&1; echo $$? > .pytest_cache/compute.status; } & \
	$(PYTEST) -m serial --durations=10; serial=$$?; \
	wait; echo "== the tests without DDS (run beside the serial tests):"; \
	cat .pytest_cache/compute.log; \
	if [ $$serial != 0 ]; then $(PYTEST) --lf --lfnf=none -m serial || exit 1; fi; \
	if [ "$$(cat .pytest_cache/compute.status)" != 0 ]; then \
	  $(PYTEST) --lf --lfnf=none $(COMPUTE) || exit 1; fi

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The Orocos KDL peer of the tests and benchmarks: Debian's python3-pykdl, built for the system
# Python 3.11 (itasc_ros.bench.peers imports it into the venv). Installed with apt-get where that
# works (Debian/Ubuntu, root); elsewhere the PyKDL tests are skipped with that reason.
peers: $(STAMP)
	@/usr/bin/python3 -c 'import PyKDL' 2>/dev/null \
	  || (command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] \
	      && { apt-get install -y -q python3-pykdl >/dev/null 2>&1 \
	           || { apt-get update -qq && apt-get install -y -q python3-pykdl >/dev/null; }; }) \
	  || echo "python3-pykdl not installable here: the PyKDL peer tests will be skipped"

# The peers with limits inside their solve (itasc-bench tick), for the benchmarks only (~800 MB):
# Drake in the venv; PlaCo in a venv of its own, $(VENV)/placo, as its wheel pins pin 3.8 and
# numpy < 2.4 (the venv has pin 4.1 and numpy 2.4); itasc_ros.bench.peers runs PlaCo's tick
# there, in a worker process. daqp (a C hierarchical QP, ~1 MB) in the venv, for the
# hierarchy benchmark; mink (MuJoCo, ~65 MB) for the whole-body IK row. Without them their
# benchmark rows and tests say why and skip.
limit-peers: $(STAMP)
	@$(VENV)/bin/pip install --quiet drake==1.51.1 \
	  || echo "drake not installable here: the Drake peer tests will be skipped"
	@$(VENV)/bin/pip install --quiet daqp==0.11.0 \
	  || echo "daqp not installable here: the daqp rows of the hierarchy benchmark will be skipped"
	@$(VENV)/bin/pip install --quiet mink==1.3.0 \
	  || echo "mink not installable here: its column of the whole-body IK row will be skipped"
	@{ test -x $(VENV)/placo/bin/python || $(PY) -m venv $(VENV)/placo; } \
	  && $(VENV)/placo/bin/pip install --quiet placo==0.10.2 \
	  || echo "placo not installable here: the PlaCo peer tests will be skipped"

bench: $(STAMP) peers limit-peers
	$(VENV)/bin/itasc-bench all

clean:
	rm -rf $(VENV) build install log *.egg-info
