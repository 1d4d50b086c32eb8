"""A Vision Transformer (patches, a patch encoder with a position embedding, transformer blocks of multi-head attention and a GELU MLP) with data augmentation in the model, trained with AdamW in fit.

Pattern: Keras example "Image classification with Vision Transformer" (Patches and PatchEncoder layers, keras.optimizers.AdamW(weight_decay=...), SparseCategoricalCrossentropy(from_logits=True), fit), smaller
Family: Transformer blocks
"""


import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

CLASSES, IMAGE, PATCH, DIM, HEADS, LAYERS, BATCH = 100, 48, 6, 32, 4, 2, 16
PATCHES = (IMAGE // PATCH) ** 2

keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: the truth run draws the same numbers
rng = np.random.default_rng(0)
x_train = rng.random((BATCH, 32, 32, 3), dtype=np.float32) * 255
y_train = rng.integers(0, CLASSES, (BATCH, 1))

augmentation = keras.Sequential(
    [
        layers.Normalization(),
        layers.Resizing(IMAGE, IMAGE),
        layers.RandomFlip("horizontal"),
        layers.RandomRotation(factor=0.02),
        layers.RandomZoom(height_factor=0.2, width_factor=0.2),
    ],
    name="data_augmentation",
)
augmentation.layers[0].adapt(x_train)


def mlp(x, hidden_units, dropout_rate):
    for units in hidden_units:
        x = layers.Dense(units, activation=keras.activations.gelu)(x)
        x = layers.Dropout(dropout_rate)(x)
    return x


class Patches(layers.Layer):
    def call(self, images):
        size = [1, PATCH, PATCH, 1]
        one = [1, 1, 1, 1]
        patches = tf.image.extract_patches(images, sizes=size, strides=size, rates=one, padding="VALID")
        return tf.reshape(patches, [tf.shape(images)[0], -1, PATCH * PATCH * 3])


class PatchEncoder(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.projection = layers.Dense(DIM)
        self.position_embedding = layers.Embedding(input_dim=PATCHES, output_dim=DIM)

    def call(self, patch):
        positions = tf.expand_dims(tf.range(PATCHES), axis=0)
        return self.projection(patch) + self.position_embedding(positions)


def vit_classifier():
    inputs = keras.Input(shape=(32, 32, 3))
    encoded = PatchEncoder()(Patches()(augmentation(inputs)))
    for _ in range(LAYERS):
        x1 = layers.LayerNormalization(epsilon=1e-6)(encoded)
        attention = layers.MultiHeadAttention(num_heads=HEADS, key_dim=DIM, dropout=0.1)(x1, x1)
        x2 = layers.Add()([attention, encoded])
        x3 = layers.LayerNormalization(epsilon=1e-6)(x2)
        encoded = layers.Add()([mlp(x3, [DIM * 2, DIM], 0.1), x2])
    rep = layers.Dropout(0.5)(layers.Flatten()(layers.LayerNormalization(epsilon=1e-6)(encoded)))
    logits = layers.Dense(CLASSES)(mlp(rep, [256, 128], 0.5))
    return keras.Model(inputs=inputs, outputs=logits)


model = vit_classifier()
model.compile(
    optimizer=keras.optimizers.AdamW(learning_rate=0.001, weight_decay=0.0001),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
)

if __name__ == "__main__":
    history = model.fit(x_train, y_train, batch_size=BATCH, epochs=1, steps_per_epoch=1, verbose=2)
    print("loss:", history.history["loss"][-1])
