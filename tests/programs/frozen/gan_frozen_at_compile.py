"""The Keras 2 GAN pattern: the discriminator is compiled, then frozen for the combined
model. Keras 2 kept it trainable in its own train_on_batch; Keras 3 reads ``trainable`` at
every step, so its own training call trains nothing."""

import keras
import numpy as np

keras.utils.set_random_seed(0)
latent = 8
gen = keras.Sequential(
    [keras.Input((latent,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)], name="gen"
)
disc = keras.Sequential(
    [keras.Input((4,)), keras.layers.Dense(16, activation="relu"),
     keras.layers.Dense(1, activation="sigmoid")],
    name="disc",
)
disc.compile(optimizer="adam", loss="binary_crossentropy")
disc.trainable = False
z = keras.Input((latent,))
combined = keras.Model(z, disc(gen(z)))
combined.compile(optimizer="adam", loss="binary_crossentropy")
rng = np.random.default_rng(0)
real = rng.normal(size=(32, 4)).astype("float32")
labels = np.concatenate([np.ones((32, 1)), np.zeros((32, 1))]).astype("float32")
for _ in range(2):
    noise = rng.normal(size=(32, latent)).astype("float32")
    fake = gen.predict(noise, verbose=0)
    disc.train_on_batch(np.concatenate([real, fake]), labels)
    combined.train_on_batch(noise, np.ones((32, 1), "float32"))
