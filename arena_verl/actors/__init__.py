"""The Ray edge (layer L4): the referee as a Ray actor."""
