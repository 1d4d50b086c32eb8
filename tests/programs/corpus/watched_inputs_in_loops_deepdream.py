"""DeepDream: gradient ascent on an input image to maximise two conv layers' activations of a small randomly initialised conv net.

Pattern: TensorFlow tutorial "DeepDream" (DeepDream tf.Module, tf.function with input_signature, `for n in tf.range(steps)` loop, tape.watch(img), normalised gradient ascent, clip to [-1, 1])
Family: watched inputs in loops
Bug: `tape.watch(img)` is left out; `img` is a plain tensor, so its gradient is None (the tf.function then fails while tracing when it normalises the gradient)
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--steps", type=int, default=10)
args = parser.parse_args()

rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
original_img = rng.uniform(0, 255, size=(48, 48, 3)).astype("float32")

layers = tf.keras.layers
inputs = tf.keras.Input((None, None, 3))
h = layers.Conv2D(16, 3, padding="same", activation="relu", name="conv1")(inputs)
h = layers.MaxPooling2D()(h)
mixed3 = layers.Conv2D(32, 3, padding="same", activation="relu", name="mixed3")(h)
h = layers.MaxPooling2D()(mixed3)
mixed5 = layers.Conv2D(32, 3, padding="same", activation="relu", name="mixed5")(h)
base_model = tf.keras.Model(inputs, [mixed3, mixed5], name="base")  # weights=None stand-in for InceptionV3
dream_model = tf.keras.Model(inputs=base_model.input, outputs=base_model.outputs)


def calc_loss(img, model):
    img_batch = tf.expand_dims(img, axis=0)
    layer_activations = model(img_batch)
    losses = [tf.math.reduce_mean(act) for act in layer_activations]
    return tf.reduce_sum(losses)


class DeepDream(tf.Module):
    def __init__(self, model):
        self.model = model

    @tf.function(input_signature=(
        tf.TensorSpec(shape=[None, None, 3], dtype=tf.float32),
        tf.TensorSpec(shape=[], dtype=tf.int32),
        tf.TensorSpec(shape=[], dtype=tf.float32),
    ))
    def __call__(self, img, steps, step_size):
        loss = tf.constant(0.0)
        for n in tf.range(steps):
            with tf.GradientTape() as tape:
                if not args.bug:
                    tape.watch(img)
                loss = calc_loss(img, self.model)
            gradients = tape.gradient(loss, img)
            gradients /= tf.math.reduce_std(gradients) + 1e-8
            img = img + gradients * step_size
            img = tf.clip_by_value(img, -1, 1)
        return loss, img


deepdream = DeepDream(dream_model)
img = tf.keras.applications.inception_v3.preprocess_input(tf.constant(original_img))
for chunk in range(2):
    loss, img = deepdream(img, tf.constant(args.steps // 2), tf.constant(0.01))
    print(f"chunk {chunk}: loss {float(loss):.4f}")
result = tf.cast(255 * (img + 1.0) / 2.0, tf.uint8)
print("dream image", result.shape, result.dtype)
