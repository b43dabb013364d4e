"""The node says at start-up whether DDS Security (SROS2) protects it.

The summary is a pure function of the command line, the environment and the keystore's files;
one node started over DDS with ``Permissive`` and an enclave without keys logs the warning that
it runs without security (the PyPI Fast DDS has no security plugins, so ``Enforce`` cannot be
started here).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from procs import read_log, start_ros, stop_process

from itasc_ros.ros.security import ENCLAVE_FILES, enclave_of, security_summary
from itasc_ros.tools.dds_env import local_dds_env

ARGV = ["itasc_node", "--ros-args", "--enclave", "/itasc_node", "-p", "x:=1"]


def test_off_unless_enabled() -> None:
    level, text = security_summary(ARGV, {})
    assert level == logging.INFO and text.startswith("DDS Security: off")
    assert "any participant" in text


def test_the_enclave_comes_from_the_override_then_the_ros_args() -> None:
    assert enclave_of(ARGV, {}) == "/itasc_node"
    assert enclave_of(["n", "--ros-args", "-e", "/a"], {}) == "/a"
    assert enclave_of(ARGV, {"ROS_SECURITY_ENCLAVE_OVERRIDE": "/b"}) == "/b"
    assert enclave_of(["n", "--enclave", "/c"], {}) == "/"  # not a ROS argument
    assert enclave_of(["n"], {}) == "/"


def test_permissive_without_keys_warns_that_it_runs_unsecured(tmp_path: Path) -> None:
    env = {"ROS_SECURITY_ENABLE": "true", "ROS_SECURITY_KEYSTORE": str(tmp_path)}
    level, text = security_summary(ARGV, env)
    assert level == logging.WARNING and "WITHOUT security" in text and "cert.pem" in text
    folder = tmp_path / "enclaves" / "itasc_node"
    folder.mkdir(parents=True)
    for f in ENCLAVE_FILES:
        (folder / f).write_text("x")
    level, text = security_summary(ARGV, env)
    assert level == logging.WARNING and "strategy Permissive" in text and "Enforce" in text
    level, text = security_summary(ARGV, {**env, "ROS_SECURITY_STRATEGY": "Enforce"})
    assert level == logging.INFO and text.startswith("DDS Security: on, enforced")


def test_the_node_logs_it_at_start_up(tmp_path: Path, dds_domain: int) -> None:
    env = {
        **local_dds_env(dds_domain),
        "ROS_SECURITY_ENABLE": "true",
        "ROS_SECURITY_STRATEGY": "Permissive",
        "ROS_SECURITY_KEYSTORE": str(tmp_path / "keystore"),
    }
    proc = start_ros(dds_domain, ns="/sec", env=env)
    try:
        deadline = time.monotonic() + 30.0
        while "DDS Security" not in read_log(proc) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        stop_process(proc)
    log = read_log(proc)
    lines = [line for line in log.splitlines() if "DDS Security" in line]
    assert lines and "[WARN]" in lines[0] and "WITHOUT security" in lines[0], log[-2000:]
