"""A training loop that uses its standard streams the ways programs do, and logs each
step's gradient to the file named on its command line."""

import faulthandler
import subprocess
import sys

import tensorflow as tf

log_path = sys.argv[1]
sys.stdout.reconfigure(encoding="utf-8")
faulthandler.enable()
print("épochs: 3")
sys.stdout.buffer.write(b"raw bytes\n")
sys.stdout.flush()
subprocess.run([sys.executable, "-c", "print('from a child')"], stdout=sys.stdout, check=True)
print("to stderr", file=sys.stderr)
print(f"stdout fd {sys.stdout.fileno()}, stderr fd {sys.stderr.fileno()}")

w = tf.Variable(1.0)
opt = tf.keras.optimizers.SGD(0.1)
for step in range(3):
    with tf.GradientTape() as tape:
        loss = w * 2.0
    g = tape.gradient(loss, w)
    with open(log_path, "a") as log:
        log.write(f"step {step}: {g}\n")
    opt.apply_gradients([(g, w)])
