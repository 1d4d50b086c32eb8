"""Trains a subclassed CNN whose call() has a Python `if training:` augmentation branch and a Python for loop over a list of conv stages, with model.fit.

Pattern: Keras guide "Customizing what happens in fit()" / subclassed ResNet-style models (stages in a Python list, training-only augmentation and dropout) trained with compile + fit
Family: Model subclass with Python control flow
Bug: the first stage's output is wrapped in tf.stop_gradient inside the stage loop, so stem/kernel, stem/bias and stage0's conv kernels/biases get no gradient
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
images = rng.uniform(size=(160, 12, 12, 3)).astype("float32")
labels = (images[:, :6, :, 0].mean(axis=(1, 2)) > images[:, 6:, :, 1].mean(axis=(1, 2))).astype("int32")


class ConvStage(tf.keras.layers.Layer):
    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.conv_a = tf.keras.layers.Conv2D(filters, 3, padding="same", activation="relu")
        self.conv_b = tf.keras.layers.Conv2D(filters, 3, padding="same", activation="relu")
        self.pool = tf.keras.layers.MaxPooling2D()

    def call(self, x):
        return self.pool(self.conv_b(self.conv_a(x)))


class StagedCNN(tf.keras.Model):
    def __init__(self, widths=(8, 16), num_classes=2):
        super().__init__()
        self.stem = tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="stem")
        self.stages = [ConvStage(w, name=f"stage{i}") for i, w in enumerate(widths)]
        self.dropout = tf.keras.layers.Dropout(0.25)
        self.classifier = tf.keras.layers.Dense(num_classes, name="classifier")

    def call(self, x, training=False):
        if training:
            x = tf.image.random_flip_up_down(x)
            x = x + tf.random.normal(tf.shape(x), stddev=0.02)
        x = self.stem(x)
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if args.bug and i == 0:
                x = tf.stop_gradient(x)
        x = tf.reduce_mean(x, axis=[1, 2])
        if training:
            x = self.dropout(x, training=training)
        return self.classifier(x)


model = StagedCNN()
model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
history = model.fit(images, labels, batch_size=32, epochs=args.epochs, verbose=0)
print({k: round(v[-1], 4) for k, v in history.history.items()})
