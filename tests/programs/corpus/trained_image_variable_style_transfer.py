"""Neural style transfer: an image tf.Variable is optimised with Adam so a frozen conv feature extractor sees the content of one image and the Gram-matrix style of another.

Pattern: TensorFlow tutorial "Neural style transfer" (vgg_layers with trainable=False, StyleContentModel, gram_matrix, image = tf.Variable(content_image), @tf.function train_step with opt.apply_gradients([(grad, image)]), clip_0_1 assign, total variation)
Family: trained image variable
Bug: the image is quantised to 8-bit levels with `tf.round(image * 255) / 255` before the extractor; tf.round has no gradient, so `image` gets a None gradient (Keras then fails while tracing: "No gradients provided for any variable")
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--steps-per-epoch", type=int, default=5)
args = parser.parse_args()

rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
content_image = tf.constant(rng.uniform(0, 1, size=(1, 64, 64, 3)), tf.float32)
style_image = tf.constant(rng.uniform(0, 1, size=(1, 64, 64, 3)), tf.float32)

content_layers = ["block4_conv1"]
style_layers = ["block1_conv1", "block2_conv1", "block3_conv1", "block4_conv1"]


def mini_vgg():
    """A weights=None stand-in for tf.keras.applications.VGG19(include_top=False)."""
    layers = tf.keras.layers
    x = inputs = tf.keras.Input((None, None, 3))
    for block, filters in enumerate([8, 16, 16, 32], start=1):
        x = layers.Conv2D(filters, 3, padding="same", activation="relu", name=f"block{block}_conv1")(x)
        x = layers.MaxPooling2D(name=f"block{block}_pool")(x)
    return tf.keras.Model(inputs, x, name="vgg19")


def vgg_layers(layer_names):
    vgg = mini_vgg()
    vgg.trainable = False
    outputs = [vgg.get_layer(name).output for name in layer_names]
    return tf.keras.Model([vgg.input], outputs)


def gram_matrix(input_tensor):
    result = tf.linalg.einsum("bijc,bijd->bcd", input_tensor, input_tensor)
    input_shape = tf.shape(input_tensor)
    num_locations = tf.cast(input_shape[1] * input_shape[2], tf.float32)
    return result / num_locations


class StyleContentModel(tf.keras.models.Model):
    def __init__(self, style_layers, content_layers):
        super().__init__()
        self.vgg = vgg_layers(style_layers + content_layers)
        self.style_layers, self.content_layers = style_layers, content_layers
        self.num_style_layers = len(style_layers)
        self.vgg.trainable = False

    def call(self, inputs):
        inputs = inputs * 255.0
        preprocessed_input = tf.keras.applications.vgg19.preprocess_input(inputs)
        outputs = self.vgg(preprocessed_input)
        style_outputs = [gram_matrix(o) for o in outputs[: self.num_style_layers]]
        content_outputs = outputs[self.num_style_layers:]
        return {
            "content": dict(zip(self.content_layers, content_outputs)),
            "style": dict(zip(self.style_layers, style_outputs)),
        }


extractor = StyleContentModel(style_layers, content_layers)
style_targets = extractor(style_image)["style"]
content_targets = extractor(content_image)["content"]
image = tf.Variable(content_image)
opt = tf.keras.optimizers.Adam(learning_rate=0.02, beta_1=0.99, epsilon=1e-1)
style_weight, content_weight, total_variation_weight = 1e-2, 1e4, 30


def style_content_loss(outputs):
    style_outputs, content_outputs = outputs["style"], outputs["content"]
    style_loss = tf.add_n([tf.reduce_mean((style_outputs[n] - style_targets[n]) ** 2) for n in style_layers])
    content_loss = tf.add_n(
        [tf.reduce_mean((content_outputs[n] - content_targets[n]) ** 2) for n in content_layers])
    return style_loss * style_weight / len(style_layers) + content_loss * content_weight / len(content_layers)


def clip_0_1(image):
    return tf.clip_by_value(image, clip_value_min=0.0, clip_value_max=1.0)


@tf.function()
def train_step(image):
    with tf.GradientTape() as tape:
        pixels = tf.round(image * 255.0) / 255.0 if args.bug else image
        outputs = extractor(pixels)
        loss = style_content_loss(outputs)
        loss += total_variation_weight * tf.reduce_sum(tf.image.total_variation(pixels))
    grad = tape.gradient(loss, image)
    opt.apply_gradients([(grad, image)])
    image.assign(clip_0_1(image))
    return loss


for epoch in range(args.epochs):
    for _ in range(args.steps_per_epoch):
        loss = train_step(image)
    print(f"epoch {epoch}: loss {float(loss):.2f}")
