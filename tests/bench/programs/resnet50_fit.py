"""A plain ResNet50 training program: synthetic batch, compile, one step of fit.

Used by tests/bench/bench_program.py, which times `tfviz check` on this file
against `python` running it. Nothing here knows about tfviz.
"""

import numpy as np
import tensorflow as tf

BATCH = 8
CLASSES = 1000

rng = np.random.default_rng(0)
images = rng.random((BATCH, 224, 224, 3), dtype=np.float32)
labels = rng.integers(0, CLASSES, BATCH)

model = tf.keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3), classes=CLASSES)
model.compile(
    optimizer=tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.9),
    loss="sparse_categorical_crossentropy",
    metrics=["accuracy"],
)

if __name__ == "__main__":
    history = model.fit(images, labels, batch_size=BATCH, epochs=1, steps_per_epoch=1, verbose=2)
    print("loss:", history.history["loss"][-1])
