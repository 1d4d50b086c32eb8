"""A learning rate too high for inputs that were never normalised.

The inputs are raw values in the tens, so each SGD step overshoots further than the last:
the weights grow by orders of magnitude per batch until the squared error overflows float32,
and Model.fit's loss turns inf, then NaN, within the first epoch. Standardise x (or lower the
learning rate, or clip the gradients) and it trains.

    tfviz check train_nan_fit_lr.py --until nan
"""

import keras
import numpy as np

keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(512, 8)).astype("float32") * 30.0  # raw, unscaled
y = x @ np.linspace(-1, 1, 8).astype("float32")[:, None]

model = keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01), loss="mse")
model.fit(x, y, batch_size=32, epochs=5, shuffle=False, verbose=0)
print("final loss", model.evaluate(x, y, verbose=0))
