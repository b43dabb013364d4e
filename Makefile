# Two commands for a fresh Linux machine with Python 3.11 and no ROS:
#   make demo   -- the main job (simulated Panda, iTaSC node, targets; bag + plots)
#   make test   -- the whole test suite
# Both create .venv and install everything from PyPI (real rclpy + Fast DDS wheels).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test lint bench colcon-check clean

$(STAMP): setup.py setup.cfg pyproject.toml package.xml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[ros,test,bench]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/itasc-demo

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# Benchmarks need the Orocos KDL peer: Debian's python3-pykdl for the system python3.
bench: $(STAMP)
	@python3 -c 'import PyKDL' 2>/dev/null || /usr/bin/python3 -c 'import PyKDL' 2>/dev/null \
	  || (command -v apt-get >/dev/null && apt-get install -y -q python3-pykdl) \
	  || echo "python3-pykdl not installable: PyKDL columns will be missing"
	$(VENV)/bin/itasc-bench all

clean:
	rm -rf $(VENV) build install log *.egg-info
