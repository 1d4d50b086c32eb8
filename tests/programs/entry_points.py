"""One small model trained through each way a program can ask for a gradient.

    python entry_points.py --api fit [--bug]

With --bug, the layer `scale` reads its weight through tf.stop_gradient, so
that weight gets no gradient; everything else is healthy.
"""

import argparse

import numpy as np
import tensorflow as tf

APIS = ("tape", "jacobian", "tf_gradients", "train_on_batch", "fit", "fit_data",
        "custom_train_step", "mirrored", "mirrored_fit")
parser = argparse.ArgumentParser()
parser.add_argument("--api", choices=APIS, default="tape")
parser.add_argument("--bug", action="store_true")
args = parser.parse_args()

if args.api in ("mirrored", "mirrored_fit"):
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)


class Scale(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.alpha = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="alpha")

    def call(self, x):
        alpha = tf.stop_gradient(self.alpha) if args.bug else self.alpha
        return x * alpha


class CustomModel(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.scale = Scale(name="scale")
        self.dense = tf.keras.layers.Dense(1, name="dense")

    def call(self, x):
        return self.dense(self.scale(x))

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self(x, training=True) - y))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


rng = np.random.default_rng(0)
x = rng.normal(size=(64, 4)).astype("float32")
y = rng.normal(size=(64, 1)).astype("float32")


def make_model():
    if args.api == "custom_train_step":
        return CustomModel()
    return tf.keras.Sequential(
        [tf.keras.Input((4,)), Scale(name="scale"), tf.keras.layers.Dense(1, name="dense")])


def mse(model, xb, yb):
    return tf.reduce_mean(tf.square(model(xb, training=True) - yb))


if args.api == "mirrored":
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = make_model()
        optimizer = tf.keras.optimizers.SGD(0.01)
    optimizer.build(model.trainable_variables)

    @tf.function
    def distributed_step(xb, yb):
        def replica_step(xr, yr):
            with tf.GradientTape() as tape:
                loss = mse(model, xr, yr)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        return strategy.run(replica_step, args=(xb, yb))

    data = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((x, y)).batch(16))
    for xb, yb in data:
        distributed_step(xb, yb)
elif args.api in ("tape", "tf_gradients"):
    model = make_model()
    optimizer = tf.keras.optimizers.SGD(0.01)

    @tf.function
    def train_step(xb, yb):
        if args.api == "tape":
            with tf.GradientTape() as tape:
                loss = mse(model, xb, yb)
            grads = tape.gradient(loss, model.trainable_variables)
        else:
            loss = mse(model, xb, yb)
            grads = tf.gradients(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for i in range(0, 64, 16):
        train_step(x[i:i + 16], y[i:i + 16])
elif args.api == "jacobian":
    model = make_model()
    with tf.GradientTape() as tape:
        pred = model(x[:8])
    jac = tape.jacobian(pred, model.trainable_variables)
    print([None if j is None else j.shape for j in jac])
elif args.api == "mirrored_fit":  # fit under a strategy's scope: the model and its optimizer mirrored
    with tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).scope():
        model = make_model()
        model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
else:
    model = make_model()
    model.compile(optimizer="sgd", loss="mse")
    if args.api == "train_on_batch":
        for i in range(0, 64, 16):
            model.train_on_batch(x[i:i + 16], y[i:i + 16])
    elif args.api == "fit_data":
        model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(16), epochs=1, verbose=0)
    else:
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
print("trained")
