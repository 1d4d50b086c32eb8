"""GUI test script: a program that waits forever for its data, before any gradient step."""
import argparse
import time

import tensorflow as tf


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    parser.parse_args()
    w = tf.Variable(1.0, name="w")
    print("waiting for the data loader", flush=True)
    while True:
        time.sleep(0.1)
    with tf.GradientTape() as tape:
        value = w * 2.0
    tape.gradient(value, [w])


if __name__ == "__main__":
    main()
