"""``arena-verl audit-judge``: a judge's accuracy, position bias, order flips and transitivity, measured on rollout
dumps before training with it (docs/tools.md, ``arena-verl audit-judge``).

selection (dump -> labelled and same-outcome pairs) -> judging (both orders, measured calls) -> pairs_file (the
resumable ``pairs.jsonl``) -> :mod:`arena_verl.evaluation.audit` (the figures, pure) -> report (``summary.json``,
plots, ``index.html``); command is the command line.

**The pairs file** (``--out``/``pairs.jsonl``) holds one JSON line per judged pair, appended whole and fsynced as the
pair's two calls finish; rerunning the same command skips the pairs in it (a torn last line is dropped with a note,
a corrupt line before it is refused by number). Keys of a line:

================  ===========================================================================================
pair              the pair's id: ``<kind> | step <step> | <group key> | <first> vs <second>``
kind              ``labelled`` or ``same_outcome``; ``step``, ``group`` (the dump's group key), ``first``,
                  ``second`` (the traces' positions in the group; a labelled pair's ``first`` is the correct one),
                  ``triple`` (same-outcome: ``step <step> | <group key> | x,y,z``, its three positions; else null)
judge ...         the run's settings, the same on every line (a rerun with others is refused): ``judge`` (canonical
                  spec), ``verdict``, ``think_first``, ``seed``, ``verification``; ``judge_backend``, ``simulated``
digests           a hash of each trace's response; ``dump_file``: its step file's name, size and first-line digest
                  (a rerun on another dump is refused)
outcomes          ``[first order, second order]``: each call's P(the trace shown first is better), null without a
                  verdict; the first order shows ``first`` first
low_mass ...      per call as well: ``low_mass`` (1 when the judge counted the call low-mass), ``tokens_in``,
                  ``tokens_out`` (null: not measured), ``seconds``
================  ===========================================================================================
"""

from arena_verl.tools.audit.command import configure_parser, main, run

__all__ = ["configure_parser", "main", "run"]
