"""GUI test script: ends its own process with os._exit(3) while loading."""
import os

print("about to call os._exit(3)")
os._exit(3)
