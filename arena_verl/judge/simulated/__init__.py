"""The SIMULATED judge, for tests, benchmarks and the CPU demo only: one law (:mod:`.law`: a verdict drawn from two
hidden qualities, a call's latency), two interfaces (:mod:`.pairs` for the tournament benchmarks,
:mod:`.trace_judge` the ``backend=simulated`` judge that reads samples). It never reads a trace's reasoning; anything
that reports figures from it must say the judge was simulated."""
