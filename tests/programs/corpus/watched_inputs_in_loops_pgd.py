"""PGD adversarial training (Madry et al.) of a small CNN on synthetic images: a tf.function crafts L-inf PGD examples in a tf.range loop, then trains on them.

Pattern: Madry et al. 2018 PGD adversarial training / CleverHans TF2 projected_gradient_descent (random start, tape.watch(x_adv), x_adv + alpha * sign(grad), clip to the eps-ball and to [0, 1]) inside a tf.function train step
Family: watched inputs in loops
Bug: the model binarises its input with `tf.sign` (a "thresholding" preprocessing layer without a straight-through estimator): the gradient w.r.t. `x_adv` is exactly zero, so PGD never moves (gradient masking); the weights still train
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()

EPS, ALPHA, PGD_STEPS = 0.1, 0.025, 4
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
x_train = rng.uniform(0, 1, size=(128, 16, 16, 1)).astype("float32")
y_train = (x_train[:, :, :8].mean(axis=(1, 2, 3)) > x_train[:, :, 8:].mean(axis=(1, 2, 3))).astype("int32")

preprocess = [tf.keras.layers.Lambda(lambda t: 0.5 * (tf.sign(t - 0.5) + 1.0))] if args.bug else []
model = tf.keras.Sequential([
    tf.keras.Input((16, 16, 1)),
    *preprocess,
    tf.keras.layers.Conv2D(16, 3, activation="relu"),
    tf.keras.layers.MaxPooling2D(),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(2),
])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam(1e-3)


@tf.function
def pgd_attack(x, y):
    x_adv = tf.clip_by_value(x + tf.random.uniform(tf.shape(x), -EPS, EPS), 0.0, 1.0)
    for _ in tf.range(PGD_STEPS):
        with tf.GradientTape() as tape:
            tape.watch(x_adv)
            loss = loss_fn(y, model(x_adv, training=False))
        grad = tape.gradient(loss, x_adv)
        x_adv = x_adv + ALPHA * tf.sign(grad)
        x_adv = tf.clip_by_value(x_adv, x - EPS, x + EPS)
        x_adv = tf.clip_by_value(x_adv, 0.0, 1.0)
    return x_adv


@tf.function
def train_step(x, y):
    x_adv = pgd_attack(x, y)
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x_adv, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss, tf.reduce_max(tf.abs(x_adv - x))


dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(32)
for epoch in range(args.epochs):
    for x, y in dataset:
        loss, distance = train_step(x, y)
    print(f"epoch {epoch}: adversarial loss {float(loss):.4f}, max |x_adv - x| {float(distance):.3f}")
