"""A healthy control: a small regression that Model.fit trains without trouble.

    tfviz check train_healthy_fit.py --until all --max-steps 20     (exits 0)
"""

import keras
import numpy as np

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(512, 8)).astype("float32")
y = np.tanh(x @ np.linspace(-1, 1, 8).astype("float32")[:, None])

model = keras.Sequential([
    keras.Input((8,)),
    keras.layers.Dense(32, activation="relu"),
    keras.layers.Dense(32, activation="relu"),
    keras.layers.Dense(1),
])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
model.fit(x, y, batch_size=32, epochs=3, verbose=0)
print("final loss", model.evaluate(x, y, verbose=0))
