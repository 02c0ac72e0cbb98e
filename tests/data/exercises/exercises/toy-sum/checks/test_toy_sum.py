import json
import os
import random

from gpudojo.worker.checkkit import fail, requirement

# Each learner program gets this long (the engine's tests raise it to reach the whole check's limit).
TIMEOUT_S = float(os.environ.get("TOY_RUN_TIMEOUT_S", "10"))

DRIVER = """
import json, sys
from summer import total
print(json.dumps(total(json.loads(sys.argv[1]))))
"""


@requirement("sums")
def test_sums(learner, figures):
    learner.require("summer.py")
    xs = [random.randint(-50, 50) for _ in range(7)]
    got = learner.drive(DRIVER, json.dumps(xs), timeout_s=TIMEOUT_S).json()
    figures.add("total returned", got)
    if got != sum(xs):
        fail(f"total of a hidden list returned {got}; the sum is {sum(xs)}")


@requirement("cli")
def test_cli(learner, figures):
    res = learner.run(["python", "summer.py", "1", "2", "3"], timeout_s=TIMEOUT_S)
    figures.add("exit code", res.returncode)
    if res.returncode != 0 or res.stdout.strip() != "6":
        fail(f"summer.py 1 2 3 printed {res.stdout.strip()!r} (exit {res.returncode}); expected 6")


@requirement("on-gpu")
def test_gpu(gpus):
    assert gpus > 0
