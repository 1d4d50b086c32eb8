"""A tiny ViT/DeiT-style image classifier (conv patch embedding, learned class token and position embedding made with add_weight, pre-norm encoder block) trained with a tf.function custom loop.

Pattern: Vision Transformer (Dosovitskiy et al. 2021) / DeiT reference layout as in the Keras examples "Image classification with Vision Transformer" and "Train a ViT on small datasets": a layer that prepends a learned [CLS] token and adds a learned position embedding, classification from the [CLS] output, custom GradientTape train step
Family: Transformer blocks
Bug: ClassTokenAndPosition.__init__ reshapes the class token and position embedding once into broadcastable tensors ("instead of every call") and call() uses those eager copies, so cls_token and pos_embedding get None gradients and never train
Step: 2
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--steps", type=int, default=4)
args = parser.parse_args()

IMAGE, PATCH, DIM, HEADS, CLASSES = 16, 4, 32, 4, 5
NUM_PATCHES = (IMAGE // PATCH) ** 2
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
images = rng.normal(size=(128, IMAGE, IMAGE, 3)).astype(np.float32)
labels = rng.integers(0, CLASSES, size=128).astype(np.int32)
dataset = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(128, seed=0).batch(32)


class ClassTokenAndPosition(tf.keras.layers.Layer):
    """Prepends the learned [CLS] token and adds the learned position embedding (stored 2-D, checkpoint layout)."""

    def __init__(self, num_patches, dim, **kwargs):
        super().__init__(**kwargs)
        self.cls_token = self.add_weight(name="cls_token", shape=(dim,), initializer="zeros")
        self.pos_embedding = self.add_weight(name="pos_embedding", shape=(num_patches + 1, dim),
                                             initializer=tf.keras.initializers.TruncatedNormal(stddev=0.02))
        if args.bug:  # reshape once to broadcastable (1, n, dim) tensors instead of every call
            self.cls = tf.reshape(self.cls_token, (1, 1, dim))
            self.pos = tf.reshape(self.pos_embedding, (1, num_patches + 1, dim))

    def call(self, patches):
        dim = patches.shape[-1]
        cls = self.cls if args.bug else tf.reshape(self.cls_token, (1, 1, dim))
        pos = self.pos if args.bug else self.pos_embedding[None]
        cls = tf.broadcast_to(cls, [tf.shape(patches)[0], 1, dim])
        return tf.concat([cls, patches], axis=1) + pos


class EncoderBlock(tf.keras.layers.Layer):
    def __init__(self, dim, heads, **kwargs):
        super().__init__(**kwargs)
        self.norm1 = tf.keras.layers.LayerNormalization(epsilon=1e-6)
        self.attn = tf.keras.layers.MultiHeadAttention(num_heads=heads, key_dim=dim // heads, dropout=0.1)
        self.norm2 = tf.keras.layers.LayerNormalization(epsilon=1e-6)
        self.mlp = tf.keras.Sequential([tf.keras.layers.Dense(2 * dim, activation="gelu"),
                                        tf.keras.layers.Dense(dim)])

    def call(self, x, training=False):
        h = self.norm1(x)
        x = x + self.attn(h, h, training=training)
        return x + self.mlp(self.norm2(x))


class ViT(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.patch_embed = tf.keras.layers.Conv2D(DIM, PATCH, strides=PATCH, name="patch_embed")
        self.reshape = tf.keras.layers.Reshape((NUM_PATCHES, DIM))
        self.tokens = ClassTokenAndPosition(NUM_PATCHES, DIM, name="cls_pos")
        self.block = EncoderBlock(DIM, HEADS)
        self.norm = tf.keras.layers.LayerNormalization(epsilon=1e-6)
        self.head = tf.keras.layers.Dense(CLASSES, name="head")

    def call(self, images, training=False):
        x = self.tokens(self.reshape(self.patch_embed(images)))
        x = self.norm(self.block(x, training=training))
        return self.head(x[:, 0])


model = ViT()
model(images[:1])  # build eagerly
optimizer = tf.keras.optimizers.AdamW(learning_rate=1e-3, weight_decay=0.05)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for step, (x, y) in enumerate(dataset.take(args.steps)):
    print(f"step {step}: loss {float(train_step(x, y)):.4f}")
