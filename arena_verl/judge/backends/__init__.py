"""Judge backends: what every model judge shares (:mod:`.model_judge`: prompts, strict parsing with a bounded re-ask,
timeouts, retries, the concurrency cap), one module per way of reaching a model (``openai_backend``,
``vllm_backend``, ``transformers_backend``), the Python-callable judge (``python_backend``) and where a served judge
answers (``endpoint``). Import from the defining module; :func:`arena_verl.judge.make_judge` builds the configured
one."""
