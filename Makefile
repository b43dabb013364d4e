# Two commands for a fresh Linux machine with Python 3.11 and no ROS:
#   make demo   -- the main job (simulated Panda, iTaSC node, targets; bag + plots)
#   make test   -- the whole test suite
# Both create .venv and install everything from PyPI (real rclpy + Fast DDS wheels).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
# The ROS 2 wheels: kilted (default, .venv) or jazzy (make test ROS_DISTRO=jazzy, .venv-jazzy).
# Only a value on make's command line counts: a sourced ROS install sets ROS_DISTRO as well.
ifneq ($(origin ROS_DISTRO),command line)
ROS_DISTRO := kilted
endif
ifeq ($(ROS_DISTRO),kilted)
VENV      := .venv
ROS_EXTRA := ros
else ifeq ($(ROS_DISTRO),jazzy)
VENV      := .venv-jazzy
ROS_EXTRA := jazzy
else
$(error ROS_DISTRO=$(ROS_DISTRO): PyPI has the ROS 2 wheels of kilted (the default) and jazzy)
endif
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# pytest-xdist workers of make test: one per CPU, at most 4 (each test starts DDS processes)
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n > 4 ? 4 : n )))

.PHONY: demo test lint docs bench peers limit-peers clean

# The package and, beside it, the benchmarks' own distribution (bench/: itasc-bench and the
# peers; not part of the package a robot installs), which the tests of the benchmarks use.
$(STAMP): setup.py setup.cfg pyproject.toml package.xml bench/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[$(ROS_EXTRA),test]' -e ./bench
	$(PY) -m pip check
	touch $(STAMP)

# The demo on the physics robot (MuJoCo, velocity servos with a 20 ms lag, the node told it):
# bag, plots, a video and the summary beside the ideal robot's figures in demo_output/.
demo: $(STAMP)
	$(VENV)/bin/itasc-demo --physics mujoco

# The whole suite, a test file per pytest-xdist worker (a DDS test module's node process is
# shared by its tests), after every compiled kernel is compiled once (or found in the cache):
# else each test process and node of a fresh clone compiles them beside the others. Then the
# tests marked `alone` (the physics demo, the two robots' grasp and the hostile inputs' tracking,
# whose verdicts judge a real-time run: beside another worker on a slow 2-CPU machine their
# robots and node are starved) with the machine to themselves.
# Both runs run; a test passes the first time or fails make test: there are no reruns. Each run
# ends with its slowest tests (keep the whole under ~12 minutes on 2 CPUs).
test: $(STAMP)
	$(PY) -m itasc_ros.tools.warm_cache
	status=0; \
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=15 -m "not alone" || status=1; \
	$(PY) -m pytest --durations=5 -m alone || status=1; \
	exit $$status

# The documentation: doc/ built by Sphinx (MyST Markdown, autodoc of itasc_ros.core), every
# warning an error; the site in doc/_build/html.
docs: $(STAMP)
	$(PY) -m pip install --quiet -e '.[docs]'
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html doc doc/_build/html

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The Orocos KDL peer of the benchmarks (and of the tests, which skip it, saying why, where it
# is missing): Debian's python3-pykdl, built for the system Python 3.11 (itasc_bench.peers
# imports it into the venv). Installed with apt-get where that works (Debian/Ubuntu, root).
peers: $(STAMP)
	@/usr/bin/python3 -c 'import PyKDL' 2>/dev/null \
	  || (command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] \
	      && { apt-get install -y -q python3-pykdl >/dev/null 2>&1 \
	           || { apt-get update -qq && apt-get install -y -q python3-pykdl >/dev/null; }; }) \
	  || echo "python3-pykdl not installable here: the PyKDL peer rows will be skipped"

# The peers with limits inside their solve (itasc-bench tick), for the benchmarks only (~800 MB):
# Drake in the venv; PlaCo in a venv of its own, $(VENV)/placo, as its wheel pins pin 3.8 and
# numpy < 2.4 (the venv has pin 4.1 and numpy 2.4); itasc_bench.peers runs PlaCo's tick
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

# Every benchmark beside its peers (itasc_bench.page.RUNS, about an hour on 2 CPUs): each
# result's JSON replaces the last one in bench/results/, and doc/benchmarks.md is written from
# them. One again: $(PY) -m itasc_bench.page --run --only tick
bench: $(STAMP) peers limit-peers
	$(PY) -m itasc_bench.page --run

clean:
	rm -rf .venv .venv-jazzy build install log *.egg-info doc/_build
