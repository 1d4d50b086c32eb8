"""An MLP whose Dense kernels are fake-quantized to 4 bits with a learned step size (LSQ) through a @tf.custom_gradient op, trained with fit.

Pattern: quantization-aware training with a straight-through estimator written with @tf.custom_gradient, after "Learned Step Size Quantization" (Esser et al., ICLR 2020): round() in the forward pass, STE for the input and the LSQ gradient for the step size
Family: custom_gradient and recompute_grad
Bug: the custom gradient function returns `dx, None` (no gradient for the step size), so both quant_dense layers' `step` weights get None gradients and never train
Step: 2
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
args = parser.parse_args()

rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
Q_NEG, Q_POS = 8.0, 7.0  # signed 4-bit


@tf.custom_gradient
def lsq_quantize(x, step):
    v = x / step
    clipped = tf.clip_by_value(v, -Q_NEG, Q_POS)
    q = tf.round(clipped)

    def grad(dy):
        inside = tf.cast((v >= -Q_NEG) & (v <= Q_POS), dy.dtype)
        dx = dy * inside  # straight-through inside the clipping range
        if args.bug:
            return dx, None
        grad_scale = 1.0 / tf.sqrt(tf.cast(tf.size(x), dy.dtype) * Q_POS)
        dstep = tf.reduce_sum(dy * (inside * (q - v) + (1.0 - inside) * clipped)) * grad_scale
        return dx, tf.reshape(dstep, tf.shape(step))

    return q * step, grad


class QuantDense(tf.keras.layers.Layer):
    def __init__(self, units, activation=None, **kwargs):
        super().__init__(**kwargs)
        self.units, self.activation = units, tf.keras.activations.get(activation)

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units),
                                      initializer="glorot_uniform")
        self.bias = self.add_weight(name="bias", shape=(self.units,), initializer="zeros")
        self.step = self.add_weight(name="step", shape=(), initializer=tf.keras.initializers.Constant(0.05))

    def call(self, x):
        kernel = lsq_quantize(self.kernel, self.step)
        return self.activation(tf.matmul(x, kernel) + self.bias)


model = tf.keras.Sequential([
    tf.keras.Input(shape=(16,)),
    QuantDense(32, activation="relu", name="quant_dense"),
    QuantDense(4, name="quant_dense_1"),
])
model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
x = rng.normal(size=(192, 16)).astype(np.float32)
y = np.argmax(x[:, :4] + 0.1 * rng.normal(size=(192, 4)), axis=1)
model.fit(x, y, batch_size=32, epochs=2, verbose=0)
print("steps:", [float(layer.step.numpy()) for layer in model.layers])
