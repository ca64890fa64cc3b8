"""The README's main job runs end to end on CPU and says what is simulated."""

import subprocess
import sys


def test_cpu_demo_runs_and_routes_non_diverse_groups():
    out = subprocess.run(
        [sys.executable, "-m", "arena_verl.demo", "--prompts", "6", "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert "judge: SIMULATED" in text
    assert "| tournament | 18 |" in text
    assert "samples with zero GRPO advantage: 0%" in text
