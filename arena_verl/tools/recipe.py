"""What a recipe is about to run: compose an experiment config with the recipe's overrides against the installed verl,
print the key values, check the paths it names, and estimate the judge's load per training step.

    python -m arena_verl.recipe show --config-name arena_live [--strict] [hydra overrides ...]

``show`` exits 0 when the config composes and its arena settings are valid; missing local paths (data, models) are
warnings, or errors with ``--strict`` (exit 2), which the recipes use before a real run. An invalid config, and a shape
verl would refuse (or pad) at run time (:mod:`arena_verl.verl_edge.rules`), are always errors (exit 2). Nothing is
started.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from arena_verl.core.sources import classify_source
from arena_verl.tools.common.compose import CONFIG_DIR, compose_experiment, verl_config_dir  # noqa: F401
from arena_verl.verl_edge.rules import run_time_problems

__all__ = ["compose_experiment", "shown_values", "path_problems", "judge_calls_per_group", "judge_load_lines"]


# The keys a recipe's reader needs to see, in this order (reward.arena.* and reward.reward_model.* are added whole).
SHOWN_KEYS = (
    "trainer.nnodes",
    "trainer.n_gpus_per_node",
    "ray_kwargs.ray_init.num_gpus",
    "trainer.use_v1",
    "trainer.total_training_steps",
    "trainer.total_epochs",
    "trainer.save_freq",
    "trainer.test_freq",
    "trainer.resume_mode",
    "trainer.default_local_dir",
    "trainer.validation_data_dir",
    "trainer.logger",
    "trainer.project_name",
    "trainer.experiment_name",
    "data.train_files",
    "data.val_files",
    "data.train_batch_size",
    "data.max_prompt_length",
    "data.max_response_length",
    "actor_rollout_ref.model.path",
    "algorithm.adv_estimator",
    "actor_rollout_ref.actor.policy_loss.loss_mode",
    "actor_rollout_ref.actor.clip_ratio_low",
    "actor_rollout_ref.actor.clip_ratio_high",
    "actor_rollout_ref.actor.optim.lr",
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "actor_rollout_ref.actor.use_kl_loss",
    "actor_rollout_ref.rollout.name",
    "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.tensor_model_parallel_size",
    "actor_rollout_ref.rollout.gpu_memory_utilization",
    "actor_rollout_ref.rollout.val_kwargs.n",
    "actor_rollout_ref.rollout.val_kwargs.temperature",
    "algorithm.filter_groups.enable",
    "algorithm.filter_groups.metric",
    "algorithm.filter_groups.max_inflight_gen_batches",
    "reward.num_workers",
    "reward.reward_manager.name",
    "reward.custom_reward_function.path",
)
# Non-diverse shares of groups (the paper's alpha: groups whose verifier rewards agree) to show the judge load at.
ALPHAS = (0.25, 0.5, 0.75)


def _select(config, key: str) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.select(config, key, default=None, throw_on_missing=False)


def _plain(value: Any) -> Any:
    from omegaconf import DictConfig, ListConfig, OmegaConf

    if isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=True)
    return value


def _leaves(prefix: str, node: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(f"{prefix}.{key}", value)
    else:
        yield prefix, node


def shown_values(config) -> dict[str, Any]:
    """The key values a recipe prints (resolved): ``reward.arena.*`` in full, ``reward.reward_model.*`` when enabled."""
    values = {key: _plain(_select(config, key)) for key in SHOWN_KEYS}
    values.update(_leaves("reward.arena", _plain(_select(config, "reward.arena")) or {}))
    if _select(config, "reward.reward_model.enable"):
        values.update(_leaves("reward.reward_model", _plain(_select(config, "reward.reward_model"))))
    else:
        values["reward.reward_model.enable"] = False
    return values


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


def _looks_local(path: str) -> bool:
    # A hub id is "org/name"; anything absolute, relative-marked or with a file suffix is a local path.
    return path.startswith(("/", "./", "../", "~")) or Path(path).suffix in (".parquet", ".jsonl", ".json")


def path_problems(config) -> list[str]:
    """Paths the run would read that are not there: data files, the policy, a judge model folder."""
    from arena_verl.backend_registry import backend_of
    from arena_verl.settings import settings_from_config

    problems = []
    for key in ("data.train_files", "data.val_files"):
        for path in _as_list(_plain(_select(config, key))):
            if not Path(path).expanduser().exists():
                problems.append(f"{key}: {path} does not exist")
    model = _select(config, "actor_rollout_ref.model.path")
    if model and not Path(str(model)).expanduser().exists():
        where = "does not exist" if _looks_local(str(model)) else "is not a local folder (verl would fetch it)"
        problems.append(f"actor_rollout_ref.model.path: {model} {where}")
    settings = settings_from_config(config)
    judge = settings.judge
    backend = backend_of(judge)  # the registry says what of the judge is on this machine: a model folder, a tokenizer
    if backend.model_folder and judge.options.model_path and not Path(judge.options.model_path).exists():
        problems.append(f"reward.arena.judge.model_path: {judge.options.model_path} does not exist")
    elif settings.uses_judge:
        # A tokenizer the judge cannot load fails inside the referee actor, where every group would fall back
        # (referee_lost): the model judges render and count with their model's own, a served judge with its
        # tokenizer's (JUDGE_TOKENIZER; the recipes' default is the judge folder).
        checks = []
        if backend.tokenizer == "model_path" and judge.options.model_path:
            checks.append(
                (judge.options.model_path, f"reward.arena.judge.model_path (JUDGE_MODEL, the {judge.backend} judge)")
            )
        if backend.tokenizer == "tokenizer" and judge.options.tokenizer:
            checks.append((judge.options.tokenizer, "reward.arena.judge.tokenizer (JUDGE_TOKENIZER)"))
        for name, what in checks:
            problem = tokenizer_problem(name, what)
            if problem:
                problems.append(problem)
    if _select(config, "reward.reward_model.enable"):
        rm_path = _select(config, "reward.reward_model.model_path")
        if not rm_path or not Path(str(rm_path)).expanduser().exists():
            problems.append(f"reward.reward_model.model_path: {rm_path} does not exist")
    if not _select(config, "reward.sandbox_fusion.url"):
        for key in ("data.train_files", "data.val_files"):
            for path in _as_list(_plain(_select(config, key))):
                code = sorted(s for s in _data_sources(path) if classify_source(s).runs_code_in_verl)
                if code:
                    problems.append(
                        f"{key}: {path} has code problems ({', '.join(code)}) and reward.sandbox_fusion.url is not "
                        "set: verl would run the generated code on the reward workers, outside a sandbox"
                    )
    return problems


_OFFLINE = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def _offline() -> bool:
    import os

    return any(os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on") for name in _OFFLINE)


def tokenizer_problem(name: str, what: str) -> str | None:
    """Why the tokenizer ``name`` (a folder or a hub id) would not load where the judge loads it, or None.

    A folder is loaded as the judge loads it (``AutoTokenizer.from_pretrained``, nothing downloaded): one without
    tokenizer files is a problem. A hub id must be in the local cache when the hub is offline (``HF_HUB_OFFLINE`` /
    ``TRANSFORMERS_OFFLINE``, as in the image); online it is loaded the same way (downloaded into the cache, as the
    judge would)."""
    from arena_verl.judge.backends.openai_backend import (
        looks_local,  # the judge's own rule for "a folder, not a hub id"
    )

    path = Path(name).expanduser()
    local = looks_local(name)
    if local and not path.exists():
        return f"{what}: {name} does not exist"
    if local and not path.is_dir():
        return f"{what}: {name} is not a folder"
    try:
        from transformers import AutoTokenizer

        AutoTokenizer.from_pretrained(str(path) if local else name, local_files_only=local or _offline())
    except Exception as exc:  # noqa: BLE001  (whatever transformers raises: one line)
        reason = " ".join(str(exc).split())[:240] or type(exc).__name__
        if local:
            return f"{what}: {name} has no tokenizer the judge can load ({type(exc).__name__}: {reason})"
        if _offline():
            return (
                f"{what}: {name} is a hub id that is not in the local cache, and the hub is offline "
                f"({'/'.join(_OFFLINE)}): download it first (huggingface-cli download {name}) or give its folder"
            )
        return f"{what}: the hub id {name} cannot be loaded as a tokenizer ({type(exc).__name__}: {reason})"
    return None


def _cluster_free_gpus() -> list[float]:
    """Free GPUs of each alive node of RAY_ADDRESS's cluster."""
    import os

    import ray

    from arena_verl.verl_edge.placement import free_gpus_per_node

    ray.init(address=os.environ.get("RAY_ADDRESS", "auto"), logging_level="ERROR", log_to_driver=False)
    try:
        return free_gpus_per_node()
    finally:
        ray.shutdown()


def _data_sources(path: str) -> set[str]:
    """The data_source values of a parquet file (empty when it cannot be read: path_problems reports that)."""
    try:
        import pyarrow.parquet as pq

        return {str(v) for v in pq.read_table(path, columns=["data_source"]).column(0).unique().to_pylist()}
    except Exception:  # noqa: BLE001
        return set()


def judge_calls_per_group(settings) -> int:
    """Judge calls one routed group costs under ``settings``, by the route a non-diverse group takes
    (:func:`~arena_verl.core.routing.route_of`): one a trace on the pointwise route, none on the verifier's, and on
    the tournament's what the runner's own schedule makes with the settings' tournament options
    (:func:`~arena_verl.core.tournament.runner.planned_calls`: both orders with two_sided, within the budget for the
    budgeted strategies)."""
    from arena_verl.core.names import ROUTE_POINTWISE, ROUTE_VERIFIER
    from arena_verl.core.routing import route_of
    from arena_verl.core.tournament.runner import planned_calls

    route = route_of(settings.referee.mode, uniform=True)
    if route == ROUTE_VERIFIER:
        return 0
    if route == ROUTE_POINTWISE:
        return settings.referee.group_size
    return planned_calls(settings.referee.group_size, **settings.tournament.tournament_kwargs())


def every_group_judged(settings) -> bool:
    """Whether the mode judges diverse groups too (rlaif_pointwise, tournament_all), not only non-diverse ones."""
    from arena_verl.core.names import ROUTE_VERIFIER
    from arena_verl.core.routing import route_of

    return route_of(settings.referee.mode, uniform=False) != ROUTE_VERIFIER


def judge_load_lines(config) -> list[str]:
    """The judge's expected calls per training step: the prompts per step, the share of groups routed (every group for
    rlaif_pointwise and tournament_all; the non-diverse share alpha otherwise) and the calls per routed group."""
    from arena_verl.settings import settings_from_config

    settings = settings_from_config(config)
    prompts = int(_select(config, "data.train_batch_size") or 0)
    per_group = judge_calls_per_group(settings)
    if per_group == 0:
        return ["judge: none (verifier rewards only)"]
    head = f"judge calls per routed group: {per_group} (mode={settings.referee.mode}, "
    head += f"strategy={settings.tournament.strategy}, N={settings.referee.group_size}); prompts per step: {prompts}"
    if every_group_judged(settings):
        return [head, f"judge calls per step: {prompts * per_group} (every group is judged)"]
    loads = ", ".join(f"alpha={a:.2f}: {math.ceil(a * prompts) * per_group}" for a in ALPHAS)
    return [head, f"judge calls per step by the non-diverse share alpha: {loads}"]


def configure_parser(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="recipe_command", required=True, metavar="COMMAND")
    show = commands.add_parser("show", help="compose, print key values and the judge's load, check paths")
    show.add_argument("--config-name", required=True)
    show.add_argument("--config-dir", default=str(CONFIG_DIR))
    show.add_argument("--strict", action="store_true", help="missing paths are errors (exit 2)")
    show.add_argument(
        "--check-cluster", action="store_true", help="check that the run's GPU groups fit RAY_ADDRESS's nodes"
    )
    show.add_argument("overrides", nargs="*")
    repair = commands.add_parser(
        "checkpoints", help="before a (re)start: the checkpoint tracker made to name the newest complete checkpoint"
    )
    repair.add_argument("folder", help="trainer.default_local_dir (the recipes: RUN_DIR/checkpoints)")
    repair.add_argument("--keep", type=int, default=None, help="complete checkpoints kept, the newest (-1: all)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    configure_parser(parser)
    return run(parser.parse_args(argv))


def _print_values(args: argparse.Namespace, values: dict[str, Any]) -> None:
    print(f"# composed config: {args.config_name} (+ {len(args.overrides)} overrides)")
    for key, value in values.items():
        print(f"{key}={value}")


def run(args: argparse.Namespace) -> int:
    if args.recipe_command == "checkpoints":
        return repair_checkpoints(args)
    return show(args)


def repair_checkpoints(args: argparse.Namespace) -> int:
    """``checkpoints``: each repair as a warning line (a run that starts from a repaired folder says why); exit 0, or
    2 when the folder cannot be repaired (named)."""
    from arena_verl.verl_edge.checkpoints import repair

    try:
        done = repair(args.folder, keep=args.keep)
    except (OSError, ValueError) as exc:  # the tracker's atomic write names its path (an InputError)
        print(f"error: the checkpoints in {args.folder} cannot be repaired: {exc}", file=sys.stderr)
        return 2
    for line in done:
        print(f"warning: checkpoints: {line}", file=sys.stderr)
    return 0


def show(args: argparse.Namespace) -> int:
    """``show``: exit 0, or 2 for a config that does not compose, breaks verl's rules, does not fit the cluster
    (``--check-cluster``) or (``--strict``) lacks paths."""
    from arena_verl.judge.prompting.templates import check_judge_templates
    from arena_verl.settings import ContradictoryLimits, settings_from_config
    from arena_verl.verl_edge.judge_placement import verl_placement_problems
    from arena_verl.verl_edge.placement import demands_from_config, placement_problems, placement_warnings

    try:
        config = compose_experiment(args.config_name, args.overrides, Path(args.config_dir))
        values = shown_values(config)
    except Exception as exc:  # noqa: BLE001  (a bad config is one clear line, not a traceback)
        print(f"error: the config does not compose or is invalid: {exc}", file=sys.stderr)
        return 2
    try:
        load = judge_load_lines(config)
        settings = settings_from_config(config)
        refusals = run_time_problems(config, waits_for_groups=settings.uses_judge)
        refusals += verl_placement_problems(config, settings)
        check_judge_templates(settings.judge)  # an unreadable template is an invalid config, as at the trainer's start
        problems = path_problems(config)
        cluster_warnings = []
        if args.check_cluster:
            # Each trainer node's share, each judge engine, verl's reward-model nodes must fit on one node each: a
            # run that does not fit waits forever for its GPUs (the judge's routed groups fall back at the deadline).
            # Asked for, a placement that cannot fit is refused (exit 2), --strict or not.
            free = _cluster_free_gpus()
            demands = demands_from_config(config)
            refusals += placement_problems(demands, free)
            cluster_warnings = placement_warnings(demands, free)
    except ContradictoryLimits as exc:
        # Limits that contradict each other (the user's overrides included): the values, then every contradiction.
        _print_values(args, values)
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001  (a bad config is one clear line, not a traceback)
        print(f"error: the config does not compose or is invalid: {exc}", file=sys.stderr)
        return 2
    _print_values(args, values)
    if values.get("reward.arena.tournament_timeout_s") is None and settings.uses_judge:
        effective = f"{settings.referee.tournament_timeout_s:g} s"
        print(f"# reward.arena.tournament_timeout_s: null = {effective} (the judge's call with its retries, >= 900 s)")
    print("# expected judge load")
    for line in load:
        print(line)
    for warning in cluster_warnings:
        print(f"warning: {warning}", file=sys.stderr)
    label = "error" if args.strict else "warning"
    for problem in problems:
        print(f"{label}: {problem}", file=sys.stderr)
    for refusal in refusals:
        print(f"error: {refusal}", file=sys.stderr)
    return 2 if refusals or (problems and args.strict) else 0


if __name__ == "__main__":
    raise SystemExit(main())
