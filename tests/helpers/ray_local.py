"""The tests' one way to start Ray: a local single-node cluster of 2 CPUs, no dashboard, the environment verl's
workers expect, and always shut down (a leaked cluster costs the next test minutes)."""

import contextlib
import os

RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_DEDUP_LOGS": "0", "TOKENIZERS_PARALLELISM": "false"}


def set_ray_env() -> None:
    for key, value in RAY_ENV.items():
        os.environ.setdefault(key, value)


def start_local_ray(num_cpus: int = 2):
    import ray

    set_ray_env()
    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    return ray


@contextlib.contextmanager
def local_ray(num_cpus: int = 2):
    ray = start_local_ray(num_cpus)
    try:
        yield ray
    finally:
        ray.shutdown()


@contextlib.contextmanager
def fake_gpu_cluster(nodes: int = 2, gpus_per_node: int = 2):
    """``nodes`` Ray nodes on this machine, each declaring ``gpus_per_node`` (fake) GPUs and one CPU; the driver is
    connected to it. For placement checks: nothing runs on the fake GPUs."""
    import ray
    from ray.cluster_utils import Cluster

    set_ray_env()
    node = {"num_cpus": 1, "num_gpus": gpus_per_node}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    try:
        for _ in range(nodes - 1):
            cluster.add_node(**node)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        yield ray
    finally:
        ray.shutdown()
        cluster.shutdown()
