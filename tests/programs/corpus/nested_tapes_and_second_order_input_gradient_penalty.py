"""A classifier trained with Keras fit and a double-backprop input-gradient penalty inside an overridden train_step; unlabeled rows are masked out of the loss.

Pattern: Keras guide "Customizing what happens in fit()" (subclassed Model.train_step) + double backpropagation (Drucker & LeCun 1992 / Ross & Doshi-Velez 2018 input-gradient regularisation)
Family: nested tapes and second order
Bug: the penalty uses `tf.norm(input_grad, axis=1)` instead of the squared norm; masked (unlabeled) rows have an exactly-zero input gradient, the derivative of sqrt at 0 is inf, and every variable's gradient becomes NaN
Step: 2
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

CLASSES, PENALTY = 4, 0.1
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
x = rng.normal(size=(256, 20)).astype("float32")
y = np.argmax(x[:, :CLASSES] + 0.3 * rng.normal(size=(256, CLASSES)), axis=1).astype("int32")
y[rng.random(256) < 0.2] = -1  # unlabeled rows


class DoubleBackpropClassifier(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden1 = tf.keras.layers.Dense(64, activation="relu")
        self.hidden2 = tf.keras.layers.Dense(64, activation="relu")
        self.logits = tf.keras.layers.Dense(CLASSES)
        self.loss_tracker = tf.keras.metrics.Mean(name="loss")

    def call(self, inputs, training=False):
        return self.logits(self.hidden2(self.hidden1(inputs)))

    def train_step(self, data):
        x, y = data
        mask = tf.cast(y >= 0, tf.float32)
        with tf.GradientTape() as tape:
            with tf.GradientTape() as input_tape:
                input_tape.watch(x)
                logits = self(x, training=True)
                ce = tf.nn.softmax_cross_entropy_with_logits(tf.one_hot(y, CLASSES), logits)
                ce = tf.reduce_sum(ce * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)
            input_grad = input_tape.gradient(ce, x)
            if args.bug:
                grad_norm = tf.norm(input_grad, axis=1)
            else:
                grad_norm = tf.reduce_sum(tf.square(input_grad), axis=1)
            loss = ce + PENALTY * tf.reduce_mean(grad_norm)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}

    @property
    def metrics(self):
        return [self.loss_tracker]


model = DoubleBackpropClassifier()
model.compile(optimizer=tf.keras.optimizers.Adam(1e-3))
history = model.fit(x, y, batch_size=64, epochs=args.epochs, verbose=0)
print("loss per epoch:", [round(v, 4) for v in history.history["loss"]])
