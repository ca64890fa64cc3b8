"""arena-verl: Reasoning Arena for verl. Non-diverse GRPO/CISPO groups are ranked by a trace tournament."""

__version__ = "0.1.0"
