"""Keep DDS on this machine: shared-memory transport only and a private domain.

Every test, demo and benchmark of this repository calls :func:`apply_local_dds_env` (or passes
:func:`local_dds_env` to a child process) so that Fast DDS opens no UDP or TCP socket and sends
no multicast discovery on the network interface.

Only ``FASTDDS_BUILTIN_TRANSPORTS=SHM`` is set. ``ROS_AUTOMATIC_DISCOVERY_RANGE`` and
``ROS_LOCALHOST_ONLY`` are *removed* if the caller's shell has them: with
``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` rmw_fastrtps adds a UDP transport of its own and binds
sockets, some on the network interface's address. With SHM alone a node opens no socket and
processes on this machine still discover each other. A user on a real robot runs without these.
"""

from __future__ import annotations

import os

# Fast DDS: only the shared-memory transport (no UDP, no multicast discovery).
_LOCAL = {
    "FASTDDS_BUILTIN_TRANSPORTS": "SHM",
    "RMW_IMPLEMENTATION": "rmw_fastrtps_cpp",
}
# Variables that make rmw_fastrtps open sockets of its own (or override the SHM-only transport).
_REMOVED = (
    "ROS_AUTOMATIC_DISCOVERY_RANGE",
    "ROS_LOCALHOST_ONLY",
    "ROS_STATIC_PEERS",
    "FASTRTPS_DEFAULT_PROFILES_FILE",
    "FASTDDS_DEFAULT_PROFILES_FILE",
)
# Every variable :func:`apply_local_dds_env` may change (to save and restore them).
LOCAL_DDS_KEYS = (*_LOCAL, *_REMOVED, "ROS_DOMAIN_ID", "ITASC_PRIVATE_DOMAIN_ID")


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
        A new dict with the shared-memory transport and the private domain set, and the
        variables that would open sockets removed.
    """
    env = dict(os.environ if base is None else base)
    env.update(_LOCAL)
    for key in _REMOVED:
        env.pop(key, None)
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
    for key in LOCAL_DDS_KEYS:
        if key in env:
            os.environ[key] = env[key]
        else:
            os.environ.pop(key, None)
    return int(env["ROS_DOMAIN_ID"])


__all__ = ["LOCAL_DDS_KEYS", "apply_local_dds_env", "local_dds_env", "private_domain_id"]
