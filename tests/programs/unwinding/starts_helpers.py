"""A training script that starts helper processes before it trains: a
``subprocess.Popen`` child, a daemonic ``multiprocessing.Process`` and an
``os.fork()`` child, each sleeping 300 s. Their pids go to a file, so a test
can see that none of them outlives tfviz. With ``--hang`` it never reaches a
gradient (so the test can end tfviz while the program runs)."""

import multiprocessing
import os
import subprocess
import sys
import time

import tensorflow as tf

out = sys.argv[1]


def nap():
    time.sleep(300)


if __name__ == "__main__":
    pids = [subprocess.Popen(["sleep", "300"]).pid]
    helper = multiprocessing.get_context("fork").Process(target=nap, daemon=True)
    helper.start()
    pids.append(helper.pid)
    child = os.fork()
    if child == 0:
        time.sleep(300)
        os._exit(0)
    pids.append(child)
    with open(os.path.join(out, "pids.txt"), "w") as fh:
        fh.write(" ".join(map(str, pids)))
    if "--hang" in sys.argv:
        time.sleep(300)
    w = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        loss = w * w
    tape.gradient(loss, [w])
