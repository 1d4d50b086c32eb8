"""Trains an unbuilt subclassed CNN (Conv2D, MaxPool, Flatten, Dense) on synthetic 8x8x1 images with a tf.function train_step.

Pattern: TensorFlow tutorial "TensorFlow 2 quickstart for experts" (subclassed MyModel, first called inside @tf.function train_step, tf.data.Dataset, 2 epochs)
Family: lazy build in tf.function
Bug: the user "detaches" the features with tf.stop_gradient after pooling, so conv1/kernel and conv1/bias get no gradient
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
rng = np.random.default_rng(0)
images = rng.normal(size=(192, 8, 8, 1)).astype("float32")
labels = (images[:, :4].mean(axis=(1, 2, 3)) > images[:, 4:].mean(axis=(1, 2, 3))).astype("int32")
train_ds = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(192, seed=0).batch(32)


class MyModel(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.conv1 = tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="conv1")
        self.pool = tf.keras.layers.MaxPooling2D()
        self.flatten = tf.keras.layers.Flatten()
        self.d1 = tf.keras.layers.Dense(32, activation="relu", name="d1")
        self.d2 = tf.keras.layers.Dense(2, name="d2")

    def call(self, x):
        x = self.pool(self.conv1(x))
        if args.bug:
            x = tf.stop_gradient(x)
        x = self.flatten(x)
        return self.d2(self.d1(x))


model = MyModel()
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam()
train_loss = tf.keras.metrics.Mean(name="train_loss")
train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")


@tf.function
def train_step(images, labels):
    with tf.GradientTape() as tape:
        predictions = model(images, training=True)
        loss = loss_object(labels, predictions)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    train_loss(loss)
    train_accuracy(labels, predictions)


for epoch in range(args.epochs):
    train_loss.reset_state()
    train_accuracy.reset_state()
    for images_batch, labels_batch in train_ds:
        train_step(images_batch, labels_batch)
    print(f"Epoch {epoch + 1}, Loss: {float(train_loss.result()):.4f}, "
          f"Accuracy: {100 * float(train_accuracy.result()):.1f}")
