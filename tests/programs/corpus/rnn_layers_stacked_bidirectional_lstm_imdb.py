"""Two stacked bidirectional LSTMs over word embeddings of synthetic reviews, trained with fit on a binary label.

Pattern: Keras example "Bidirectional LSTM on IMDB" (Embedding(max_features, 128), Bidirectional(LSTM(64, return_sequences=True)), Bidirectional(LSTM(64)), Dense(1, sigmoid), compile("adam", "binary_crossentropy"), fit)
Family: RNN layers
"""


import keras
import numpy as np
from tensorflow.keras import layers

MAX_FEATURES, MAXLEN, BATCH = 5000, 60, 16

keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: the truth run draws the same numbers
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
