"""Judge prompts, kept as one import path: the names live in their own modules.

- :mod:`arena_verl.judge.templates`: template names, loading, :func:`check_judge_templates`, :func:`task_of`;
- :mod:`arena_verl.judge.budget`: the token budget (head + tail truncation);
- :mod:`arena_verl.judge.hygiene`: the trace sanitiser and the random delimiters (its detection copy in
  :mod:`arena_verl.judge.detection_copy`);
- :mod:`arena_verl.judge.messages`: the chat messages a model judge is sent.
"""

from arena_verl.judge.budget import approx_tokens, truncate_middle
from arena_verl.judge.hygiene import EMPTY, new_delimiter, sanitize_trace, special_token_strings
from arena_verl.judge.messages import build_pairwise_messages, build_pointwise_messages
from arena_verl.judge.templates import TEMPLATE_DIR, TEMPLATES, check_judge_templates, load_template, task_of

__all__ = [
    "build_pairwise_messages",
    "build_pointwise_messages",
    "sanitize_trace",
    "truncate_middle",
    "approx_tokens",
    "special_token_strings",
    "load_template",
    "TEMPLATES",
    "TEMPLATE_DIR",
    "EMPTY",
    "task_of",
    "check_judge_templates",
    "new_delimiter",
]
