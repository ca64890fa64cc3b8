"""Wait until a Ray cluster has the live nodes and GPUs a Slurm job started; exit 1 on timeout.

scripts/slurm/lib.sh runs this on the head node, inside the container, after `ray start` and before the driver: a
fixed sleep either wastes minutes or starts verl before the workers joined (verl checks the GPUs once, at start).
It counts the GPUs the nodes advertise (`ray start --num-gpus`), not those their containers can use: lib.sh checks
those on every node (`nvidia-smi -L`) before Ray starts.

    python3 scripts/slurm/wait_for_ray.py --address HEAD_IP:6379 --nodes 3 --gpus 24 [--timeout-s 600]
"""

from __future__ import annotations

import argparse
import sys
import time


def live_nodes_and_gpus(nodes: list[dict]) -> tuple[int, float]:
    """Count the live nodes of ``ray.nodes()`` and the GPUs they offer (a dead node's GPUs are gone)."""
    alive = [node for node in nodes if node.get("Alive")]
    return len(alive), sum(node.get("Resources", {}).get("GPU", 0.0) for node in alive)


def connect(address: str, deadline: float, poll_s: float) -> bool:
    """Attach to the cluster as a driver, retrying while the head's GCS is still starting."""
    import ray  # here, so that --help and the tests of the counting need no Ray

    while True:
        try:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False)
            return True
        except (ConnectionError, TimeoutError, RuntimeError) as error:
            if time.monotonic() > deadline:
                print(f"error: no Ray cluster answers at {address}: {error}", file=sys.stderr)
                return False
            time.sleep(poll_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", required=True, help="the head's GCS address, HOST:PORT")
    parser.add_argument("--nodes", type=int, required=True, help="live nodes to wait for")
    parser.add_argument("--gpus", type=float, default=0.0, help="GPUs the live nodes must offer together")
    parser.add_argument("--timeout-s", type=float, default=600.0)
    parser.add_argument("--poll-s", type=float, default=5.0)
    args = parser.parse_args(argv)

    deadline = time.monotonic() + args.timeout_s
    if not connect(args.address, deadline, args.poll_s):
        return 1
    import ray

    try:
        reported = None
        while True:
            nodes, gpus = live_nodes_and_gpus(ray.nodes())
            if (nodes, gpus) != reported:
                print(f"ray at {args.address}: {nodes}/{args.nodes} nodes, {gpus:g}/{args.gpus:g} GPUs", flush=True)
                reported = (nodes, gpus)
            if nodes >= args.nodes and gpus >= args.gpus:
                return 0
            if time.monotonic() > deadline:
                print(
                    f"error: after {args.timeout_s:g} s only {nodes} of {args.nodes} nodes ({gpus:g} of "
                    f"{args.gpus:g} GPUs) joined the Ray cluster at {args.address}; see the ray_*.log files",
                    file=sys.stderr,
                )
                return 1
            time.sleep(args.poll_s)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
