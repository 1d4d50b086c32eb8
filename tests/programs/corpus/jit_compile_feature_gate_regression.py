"""A tabular regression MLP with a learned binary feature-selection gate, trained with an XLA-compiled tf.function train step.

Pattern: TensorFlow guide "Use XLA with tf.function" (@tf.function(jit_compile=True) train step with a Keras model and optimizer) plus a straight-through hard-concrete style feature gate (Bengio et al. 2013 straight-through estimator)
Family: jit_compile
Bug: the gate is thresholded with tf.cast(sigmoid(gate_logits) > 0.5, float32) without the straight-through term, so gate_logits gets a None gradient and never trains
Step: 3
Truth: --no-jit
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--steps", type=int, default=5)
args = parser.parse_args()

rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
N_FEATURES = 12
x_train = rng.normal(size=(512, N_FEATURES)).astype(np.float32)
y_train = (2.0 * x_train[:, 0] - x_train[:, 3] + 0.5 * x_train[:, 7] ** 2)[:, None].astype(np.float32)


class GatedMLP(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.gate_logits = self.add_weight(name="gate_logits", shape=(N_FEATURES,),
                                           initializer=tf.keras.initializers.Constant(1.0))
        self.hidden = tf.keras.layers.Dense(32, activation="relu")
        self.out = tf.keras.layers.Dense(1)

    def gate(self):
        soft = tf.sigmoid(self.gate_logits)
        hard = tf.cast(soft > 0.5, tf.float32)
        if args.bug:
            return hard
        return soft + tf.stop_gradient(hard - soft)  # straight-through estimator

    def call(self, x):
        return self.out(self.hidden(x * self.gate()))


model = GatedMLP()
optimizer = tf.keras.optimizers.Adam(1e-2)


@tf.function(jit_compile=True)
def train_step(x, y):
    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        loss = tf.reduce_mean(tf.square(pred - y)) + 1e-3 * tf.reduce_sum(model.gate())  # L0-style sparsity
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for step in range(args.steps):
    idx = rng.integers(0, len(x_train), size=64)
    loss = train_step(x_train[idx], y_train[idx])
    print(f"step {step}: loss {float(loss):.4f}")
