"""The floor node with each part's CPU time counted, as :mod:`.profiled_node` counts the node's.

``run_loop_bench(node_module="itasc_bench.loop.profiled_floor")`` runs
:mod:`itasc_bench.floor_node` with the same wrappers: its wait for a joint state, its takes
and its publishes, per call, printed to its ``node.log`` when it exits. The floor's parts beside
the node's say what rclpy and DDS alone cost a tick, and so how much of the node's tick is left
for its own work at a given CPU ratio.
"""

from __future__ import annotations

import atexit
import sys

from . import profiled_node


def main(args: list[str] | None = None) -> int:
    """Run the floor node with its parts counted; report them when it exits."""
    profiled_node.install()
    from itasc_bench import floor_node

    atexit.register(profiled_node.report)
    return floor_node.main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
