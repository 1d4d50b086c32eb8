"""An MLP classifier with an auxiliary (deep-supervision) head trained in float16 with an explicit LossScaleOptimizer in a tf.function loop.

Pattern: TensorFlow guide "Mixed precision", section "Training the model with a custom training loop", in its Keras 3 form (optimizer = LossScaleOptimizer(inner); scaled = optimizer.scale_loss(loss); grads of the scaled loss; optimizer.apply(grads, vars) unscales and skips non-finite steps)
Family: mixed precision
Bug: the step scales and differentiates only the main loss (`optimizer.scale_loss(main_loss)`) although the auxiliary loss is computed; the auxiliary head's kernel and bias get None gradients and never train
Step: 2
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--steps", type=int, default=4)
args = parser.parse_args()

tf.keras.mixed_precision.set_global_policy("mixed_float16")
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python

x_train = rng.normal(size=(256, 20)).astype(np.float32)
y_train = (x_train[:, :3].sum(axis=1) > 0).astype(np.int32) + (x_train[:, 3] > 1).astype(np.int32)
dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(64)


class AuxNet(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden1 = tf.keras.layers.Dense(64, activation="relu", name="hidden1")
        self.hidden2 = tf.keras.layers.Dense(64, activation="relu", name="hidden2")
        self.head = tf.keras.layers.Dense(3, name="head")
        self.aux_head = tf.keras.layers.Dense(3, name="aux_head")
        self.to_float32 = tf.keras.layers.Activation("linear", dtype="float32")

    def call(self, x):
        h1 = self.hidden1(x)
        logits = self.to_float32(self.head(self.hidden2(h1)))
        aux_logits = self.to_float32(self.aux_head(h1))
        return logits, aux_logits


model = AuxNet()
optimizer = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.05, momentum=0.9))
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits, aux_logits = model(x, training=True)
        main_loss = loss_fn(y, logits)
        loss = main_loss + 0.3 * loss_fn(y, aux_logits)
        scaled_loss = optimizer.scale_loss(main_loss if args.bug else loss)
    grads = tape.gradient(scaled_loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss


for step, (x, y) in enumerate(dataset.repeat().take(args.steps)):
    loss = train_step(x, y)
    print(f"step {step}: loss {float(loss):.4f}, loss scale {float(optimizer.dynamic_scale.numpy())}")
