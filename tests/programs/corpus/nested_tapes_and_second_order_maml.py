"""Second-order MAML on sinusoid regression with learned per-layer inner learning rates (MAML++ LSLR), functional MLP weights as tf.Variables.

Pattern: MAML (Finn et al. 2017) sinusoid reference loop in TF2: inner tape -> task gradients, fast weights = w - alpha * g, query loss with the fast weights under an outer tape; learned inner step sizes as in MAML++ / Meta-SGD
Family: nested tapes and second order
Bug: the query loss is computed with the slow `weights` instead of `fast_weights` (a one-word typo), so the learned inner learning rates `inner_lrs` get a None gradient and are never meta-trained
Step: 4
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--meta-steps", type=int, default=5)
args = parser.parse_args()

TASKS, K_SHOT, HIDDEN = 3, 10, 40
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python


def sample_task():
    amplitude, phase = rng.uniform(0.1, 5.0), rng.uniform(0, np.pi)
    x = rng.uniform(-5, 5, size=(2 * K_SHOT, 1)).astype("float32")
    y = (amplitude * np.sin(x - phase)).astype("float32")
    return x[:K_SHOT], y[:K_SHOT], x[K_SHOT:], y[K_SHOT:]


init = tf.keras.initializers.GlorotUniform(seed=0)
shapes = [(1, HIDDEN), (HIDDEN,), (HIDDEN, HIDDEN), (HIDDEN,), (HIDDEN, 1), (1,)]
weights = [tf.Variable(init(s) if len(s) == 2 else tf.zeros(s), name=f"w{i}") for i, s in enumerate(shapes)]
inner_lrs = [tf.Variable(0.01, name=f"inner_lr{i}") for i in range(len(shapes))]
meta_optimizer = tf.keras.optimizers.Adam(1e-3)


def forward(x, params):
    h = tf.nn.relu(x @ params[0] + params[1])
    h = tf.nn.relu(h @ params[2] + params[3])
    return h @ params[4] + params[5]


@tf.function
def meta_step(xs, ys, xq, yq):
    with tf.GradientTape() as outer_tape:
        query_losses = []
        for t in range(TASKS):
            with tf.GradientTape() as inner_tape:
                support_loss = tf.reduce_mean(tf.square(forward(xs[t], weights) - ys[t]))
            grads = inner_tape.gradient(support_loss, weights)
            fast_weights = [w - lr * g for w, lr, g in zip(weights, inner_lrs, grads)]
            query_params = weights if args.bug else fast_weights
            query_losses.append(tf.reduce_mean(tf.square(forward(xq[t], query_params) - yq[t])))
        meta_loss = tf.add_n(query_losses) / TASKS
    meta_vars = weights + inner_lrs
    meta_grads = outer_tape.gradient(meta_loss, meta_vars)
    meta_optimizer.apply_gradients(zip(meta_grads, meta_vars))
    return meta_loss


for step in range(args.meta_steps):
    xs, ys, xq, yq = (np.stack(a) for a in zip(*[sample_task() for _ in range(TASKS)]))
    loss = meta_step(xs, ys, xq, yq)
    print(f"meta step {step}: query loss {float(loss):.4f} inner lr[0] {float(inner_lrs[0]):.5f}")
