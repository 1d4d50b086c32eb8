"""Two stacked bidirectional LSTMs over word embeddings, as Keras' "Bidirectional LSTM on
IMDB" example builds them, trained with ``fit`` for one step on synthetic reviews. Used by
tests/bench/bench_program.py; nothing here knows about tfviz.
"""

import numpy as np
from tensorflow import keras
from tensorflow.keras import layers

MAX_FEATURES, MAXLEN, BATCH = 20000, 200, 32

rng = np.random.default_rng(0)
x_train = rng.integers(1, MAX_FEATURES, (BATCH * 2, MAXLEN))
y_train = rng.integers(0, 2, (BATCH * 2,))

inputs = keras.Input(shape=(None,), dtype="int32")
x = layers.Embedding(MAX_FEATURES, 128)(inputs)
x = layers.Bidirectional(layers.LSTM(64, return_sequences=True))(x)
x = layers.Bidirectional(layers.LSTM(64))(x)
outputs = layers.Dense(1, activation="sigmoid")(x)
model = keras.Model(inputs, outputs)
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])

if __name__ == "__main__":
    history = model.fit(x_train, y_train, batch_size=BATCH, epochs=1, steps_per_epoch=1, verbose=2)
    print("loss:", history.history["loss"][-1])
