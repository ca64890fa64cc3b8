"""The pure core (layer L0): tournaments, routing, rewards, the referee's bookkeeping. stdlib, numpy and scipy
only: never verl, Ray, vLLM, torch, transformers, omegaconf or Hydra (``tests/unit/test_layers.py`` enforces it)."""
