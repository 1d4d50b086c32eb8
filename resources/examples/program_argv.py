"""A healthy training program driven by its command line.

`main()` parses sys.argv with argparse: `--lr FLOAT` is required, `--epochs`
defaults to 2. Given arguments (e.g. `--lr 0.1`), it fits a linear regression
with an eager GradientTape loop, and both weights (`sequential/linear/kernel`,
`sequential/linear/bias`) get gradients. Without `--lr`, argparse prints its
usage and exits with status 2 before any gradient is computed.
"""

import argparse
import sys

import numpy as np
import tensorflow as tf


def main(argv=None):
    parser = argparse.ArgumentParser(description="Fit y = 2x - 1.")
    parser.add_argument("--lr", type=float, required=True, help="learning rate")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 1)).astype("float32")
    y = 2.0 * x - 1.0

    model = tf.keras.Sequential([tf.keras.Input((1,)), tf.keras.layers.Dense(1, name="linear")])
    optimizer = tf.keras.optimizers.SGD(learning_rate=args.lr)
    for epoch in range(args.epochs):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        print(f"epoch {epoch + 1}: loss {float(loss):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
