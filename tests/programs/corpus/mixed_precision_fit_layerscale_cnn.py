"""A small ConvNeXt-style CNN with LayerScale residual branches trained with model.fit under the mixed_float16 policy.

Pattern: TensorFlow guide "Mixed precision" (set_global_policy("mixed_float16"), float32 softmax output, compile/fit wraps the optimizer in a LossScaleOptimizer) with a LayerScale layer as in CaiT / ConvNeXt
Family: mixed precision
Bug: LayerScale.build() pre-casts its gamma weight to float16 once ("to avoid a cast every step"), so call() multiplies by a constant copy and both gamma weights get no gradient and never train
Step: 2
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
args = parser.parse_args()

tf.keras.mixed_precision.set_global_policy("mixed_float16")
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python


class LayerScale(tf.keras.layers.Layer):
    """Per-channel learnable scale of a residual branch (init 1e-1)."""

    def build(self, input_shape):
        self.gamma = self.add_weight(name="gamma", shape=(input_shape[-1],),
                                     initializer=tf.keras.initializers.Constant(0.1))
        if args.bug:
            self.gamma_half = tf.cast(self.gamma, self.compute_dtype)

    def call(self, x):
        if args.bug:
            return x * self.gamma_half
        return x * tf.cast(self.gamma, x.dtype)


def block(x, filters):
    y = tf.keras.layers.DepthwiseConv2D(3, padding="same")(x)
    y = tf.keras.layers.LayerNormalization(epsilon=1e-6)(y)
    y = tf.keras.layers.Dense(filters * 2, activation="gelu")(y)
    y = tf.keras.layers.Dense(filters)(y)
    return x + LayerScale()(y)


inputs = tf.keras.Input(shape=(16, 16, 3))
x = tf.keras.layers.Conv2D(16, 2, strides=2)(inputs)
x = block(x, 16)
x = block(x, 16)
x = tf.keras.layers.GlobalAveragePooling2D()(x)
x = tf.keras.layers.Dense(5)(x)
outputs = tf.keras.layers.Activation("softmax", dtype="float32")(x)
model = tf.keras.Model(inputs, outputs)

model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy")
images = rng.normal(size=(96, 16, 16, 3)).astype(np.float32)
labels = rng.integers(0, 5, size=96)
model.fit(images, labels, batch_size=32, epochs=1, verbose=0)
print("optimizer:", type(model.optimizer).__name__, "loss scale:", float(model.optimizer.dynamic_scale.numpy()))
