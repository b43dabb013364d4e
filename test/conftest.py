"""Shared pytest setup: test helpers on sys.path, DDS kept on this machine for every test."""

from __future__ import annotations

import os
import sys
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parent
if str(TEST_DIR) not in sys.path:
    sys.path.insert(0, str(TEST_DIR))

# Every test process (and each child it starts with local_dds_env()) uses shared-memory DDS in a
# private domain: no UDP socket, no multicast on the network interface.
from itasc_ros.tools.dds_env import apply_local_dds_env  # noqa: E402

apply_local_dds_env(int(os.environ.get("ITASC_TEST_DOMAIN_ID", 0)) or None)
