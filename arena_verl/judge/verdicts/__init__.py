"""Reading a verdict: strict parsing of a generated one (:mod:`.parsing`) and the arithmetic that turns label
probabilities into an outcome (:mod:`.label_probs`). Import from the defining module."""
