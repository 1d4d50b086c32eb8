"""An MLP regressor trained with SGD while the top Hessian eigenvalue (sharpness) is tracked by power iteration on nested-tape Hessian-vector products.

Pattern: TensorFlow guide "Advanced automatic differentiation" (Hessian-vector product: outer tape over the inner gradient dotted with v), power iteration as in sharpness / edge-of-stability studies
Family: nested tapes and second order
Bug: the inner `inner.gradient(...)` and the dot with v are dedented out of the outer tape, so the outer gradient is None for every variable (the program maps None to zeros, as HVP helpers do) and the sharpness silently reads 0
Step: 2
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
x = rng.normal(size=(256, 8)).astype("float32")
y = (np.sin(x[:, :1]) + 0.5 * x[:, 1:2] ** 2 + 0.1 * rng.normal(size=(256, 1))).astype("float32")

model = tf.keras.Sequential([
    tf.keras.Input((8,)),
    tf.keras.layers.Dense(32, activation="tanh"),
    tf.keras.layers.Dense(32, activation="tanh"),
    tf.keras.layers.Dense(1),
])
optimizer = tf.keras.optimizers.SGD(0.05)
loss_fn = tf.keras.losses.MeanSquaredError()


@tf.function
def hvp(xb, yb, v):
    params = model.trainable_variables
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            loss = loss_fn(yb, model(xb))
        if not args.bug:
            grads = inner.gradient(loss, params)
            grad_dot_v = tf.add_n([tf.reduce_sum(g * u) for g, u in zip(grads, v)])
    if args.bug:
        grads = inner.gradient(loss, params)
        grad_dot_v = tf.add_n([tf.reduce_sum(g * u) for g, u in zip(grads, v)])
    hv = outer.gradient(grad_dot_v, params)
    return [tf.zeros_like(p) if h is None else h for h, p in zip(hv, params)]


def top_eigenvalue(xb, yb, iters=3):
    v = [tf.random.normal(p.shape) for p in model.trainable_variables]
    for _ in range(iters):
        norm = tf.sqrt(tf.add_n([tf.reduce_sum(u * u) for u in v])) + 1e-12
        v = [u / norm for u in v]
        hv = hvp(xb, yb, v)
        eig = tf.add_n([tf.reduce_sum(a * b) for a, b in zip(hv, v)])
        v = hv
    return float(eig)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)
for epoch in range(args.epochs):
    sharpness = top_eigenvalue(x[:128], y[:128])
    for xb, yb in dataset:
        loss = train_step(xb, yb)
    print(f"epoch {epoch}: loss {float(loss):.4f} sharpness {sharpness:.3f}")
