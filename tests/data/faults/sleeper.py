"""Says it is up, then sleeps: a run that only ends when it is stopped."""

import time

print("up", flush=True)
time.sleep(3600)
