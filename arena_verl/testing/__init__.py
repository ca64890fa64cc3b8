"""Development assets: the toy model and tokenizer, the SmolLM2 conversion. Never imported by L0-L5."""
