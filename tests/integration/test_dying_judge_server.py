"""The fault tests' dying judge server (tests/helpers: the loopback judge in a process of its own) keeps the promise
they assert from: under concurrent requests, no answer is logged after the time of its death, a client receives only
logged answers, and the death's record counts the answers logged before it. A request that passed the death check
while another request died used to log (and send) its answer after the death's time: the fault test then counted a
verdict the window before the death did not hold (CI, 2026-12-05)."""

import http.client
import json
import threading
import urllib.error
import urllib.request

from helpers.chaos import JudgeProcess

REQUESTS = 16
DIES_AFTER = 3
PROMPT = "## Attempt A\n<attempt>\nx = 1\n</attempt>\n## Attempt B\n<attempt>\nx = 2\n</attempt>"


def ask(url: str, received: list[int], together: threading.Barrier) -> None:
    together.wait(timeout=30)  # every request at once: answers and the death race in the server's threads
    body = json.dumps({"model": "judge", "messages": [{"role": "user", "content": PROMPT}]}).encode()
    request = urllib.request.Request(url + "/chat/completions", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            json.load(response)
        received.append(1)
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError):
        pass  # the server died: no answer, its connection reset


def test_a_dying_server_logs_no_answer_after_its_death_and_sends_none_it_did_not_log(tmp_path):
    judge = JudgeProcess(tmp_path)
    for death in range(5):  # five deaths, each under a burst of concurrent requests
        judge.start()
        judge.set_control(die_after_calls=judge.calls + DIES_AFTER)
        received: list[int] = []
        together = threading.Barrier(REQUESTS)
        threads = [threading.Thread(target=ask, args=(judge.url, received, together)) for _ in range(REQUESTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        judge.wait_dead(timeout_s=30)
        died = judge.deaths()[death]
        answers = judge.answers()
        assert died["answers"] == len(answers) >= DIES_AFTER * (death + 1)
        assert all(answer["t"] <= died["t"] for answer in answers)
        before = died["answers"] - (judge.deaths()[death - 1]["answers"] if death else 0)
        assert len(received) <= before
        judge.set_control()
    judge.kill()
