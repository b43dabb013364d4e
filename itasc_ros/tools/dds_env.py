"""Keep DDS on this machine: shared-memory transport and a private domain.

Every test, demo and benchmark of this repository calls :func:`apply_local_dds_env` (or passes
:func:`local_dds_env` to a child process) so that Fast DDS never opens a UDP socket or sends
multicast discovery on the network interface. A user on a real robot runs without these.
"""

from __future__ import annotations

import os

# Fast DDS: only the shared-memory transport (no UDP, no multicast discovery).
_LOCAL = {
    "FASTDDS_BUILTIN_TRANSPORTS": "SHM",
    "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
    "RMW_IMPLEMENTATION": "rmw_fastrtps_cpp",
}


def private_domain_id(seed: int | None = None) -> int:
    """A ROS domain id in [110, 229] derived from ``seed`` (default: this process id)."""
    s = os.getpid() if seed is None else seed
    return 110 + (s % 120)


def local_dds_env(
    domain_id: int | None = None, base: dict[str, str] | None = None
) -> dict[str, str]:
    """Environment for a child process that keeps DDS on this machine.

    Args:
        domain_id: ROS_DOMAIN_ID to use; default: the current one if set by
            :func:`apply_local_dds_env`, else :func:`private_domain_id`.
        base: environment to start from (default: ``os.environ``).

    Returns:
        A new dict with the shared-memory transport and the private domain set.
    """
    env = dict(os.environ if base is None else base)
    env.update(_LOCAL)
    if domain_id is None:
        domain_id = int(env.get("ITASC_PRIVATE_DOMAIN_ID", private_domain_id()))
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["ITASC_PRIVATE_DOMAIN_ID"] = str(domain_id)
    return env


def apply_local_dds_env(domain_id: int | None = None) -> int:
    """Set the local-only DDS variables in this process (before ``rclpy.init``).

    Returns:
        The ROS domain id now in force.
    """
    env = local_dds_env(domain_id)
    for key in (*_LOCAL, "ROS_DOMAIN_ID", "ITASC_PRIVATE_DOMAIN_ID"):
        os.environ[key] = env[key]
    return int(env["ROS_DOMAIN_ID"])


__all__ = ["apply_local_dds_env", "local_dds_env", "private_domain_id"]
