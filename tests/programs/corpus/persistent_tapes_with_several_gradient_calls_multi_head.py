"""A two-head multi-task MLP (classification + regression on a shared trunk) trained with one persistent tape, two gradient calls and one optimizer per task.

Pattern: multi-task custom training loop in TF2 (shared encoder, per-task heads, tf.GradientTape(persistent=True), tape.gradient per task loss over trunk + that head, separate Adam optimizers with per-task learning rates, @tf.function train_step)
Family: persistent tapes with several gradient calls
Bug: the regression head reads `tf.stop_gradient(features)` (a "detach" copied from probe code), so the shared trunk's variables get a None gradient from the regression loss (second gradient call); Keras warns and the regression task never shapes the trunk
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
x = rng.normal(size=(512, 16)).astype("float32")
y_class = (x[:, 0] + x[:, 1] > 0).astype("int32")
y_reg = (x[:, 2] * x[:, 3] + 0.1 * rng.normal(size=512)).astype("float32")[:, None]

trunk = tf.keras.Sequential([
    tf.keras.Input((16,)),
    tf.keras.layers.Dense(64, activation="relu"),
    tf.keras.layers.Dense(32, activation="relu"),
], name="trunk")
class_head = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(2)], name="class_head")
reg_head = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(16, activation="relu"),
                                tf.keras.layers.Dense(1)], name="reg_head")
class_optimizer = tf.keras.optimizers.Adam(1e-3)
reg_optimizer = tf.keras.optimizers.Adam(3e-4)
ce = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
mse = tf.keras.losses.MeanSquaredError()
class_vars = trunk.trainable_variables + class_head.trainable_variables
reg_vars = trunk.trainable_variables + reg_head.trainable_variables


@tf.function
def train_step(xb, yc, yr):
    with tf.GradientTape(persistent=True) as tape:
        features = trunk(xb, training=True)
        class_loss = ce(yc, class_head(features, training=True))
        reg_input = tf.stop_gradient(features) if args.bug else features
        reg_loss = mse(yr, reg_head(reg_input, training=True))
    class_grads = tape.gradient(class_loss, class_vars)
    reg_grads = tape.gradient(reg_loss, reg_vars)
    del tape
    class_optimizer.apply_gradients(zip(class_grads, class_vars))
    reg_optimizer.apply_gradients(zip(reg_grads, reg_vars))
    return class_loss, reg_loss


dataset = tf.data.Dataset.from_tensor_slices((x, y_class, y_reg)).shuffle(512, seed=0).batch(64)
for epoch in range(args.epochs):
    for xb, yc, yr in dataset:
        class_loss, reg_loss = train_step(xb, yc, yr)
    print(f"epoch {epoch}: class loss {float(class_loss):.4f} reg loss {float(reg_loss):.4f}")
