"""GUI test script: never finishes loading, so the user must cancel."""
import time

print("about to hang", flush=True)
while True:
    time.sleep(0.1)
