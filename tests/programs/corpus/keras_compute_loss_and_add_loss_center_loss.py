"""A classifier trained with softmax cross-entropy plus a center loss on its embedding (learned class centers), via a Model that overrides compute_loss, trained with fit.

Pattern: Keras 3 "Customizing what happens in fit()" - overriding `compute_loss(self, x, y, y_pred, sample_weight, training=True)` with loss trackers; the loss is the center loss of Wen et al., ECCV 2016 (class centers as a trainable weight, CE + lambda * ||f - c_y||^2)
Family: Keras compute_loss and add_loss
Bug: compute_loss tracks the center term in a metric but returns only the cross-entropy, so the class centers get a None gradient and never train
Step: 3
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
args = parser.parse_args()

NUM_CLASSES, EMBED_DIM, CENTER_WEIGHT = 4, 8, 0.05
rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
x_train = rng.normal(size=(160, 12)).astype(np.float32)
y_train = np.argmax(x_train[:, :NUM_CLASSES], axis=1).astype(np.int32)


class CenterLossNet(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.backbone = tf.keras.Sequential([tf.keras.layers.Dense(32, activation="relu"),
                                             tf.keras.layers.Dense(EMBED_DIM)], name="backbone")
        self.classifier = tf.keras.layers.Dense(NUM_CLASSES, name="classifier")
        self.centers = self.add_weight(name="centers", shape=(NUM_CLASSES, EMBED_DIM), initializer="zeros")
        self.ce = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.ce_tracker = tf.keras.metrics.Mean(name="ce")
        self.center_tracker = tf.keras.metrics.Mean(name="center")

    def call(self, x):
        embedding = self.backbone(x)
        return self.classifier(tf.nn.relu(embedding)), embedding

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        logits, embedding = y_pred
        ce = self.ce(y, logits)
        centers_batch = tf.gather(self.centers, y)
        center = tf.reduce_mean(tf.reduce_sum(tf.square(embedding - centers_batch), axis=-1))
        self.ce_tracker.update_state(ce)
        self.center_tracker.update_state(center)
        loss = ce if args.bug else ce + CENTER_WEIGHT * center
        return loss

    @property
    def metrics(self):
        return [self.ce_tracker, self.center_tracker]


model = CenterLossNet()
model.compile(optimizer=tf.keras.optimizers.Adam(1e-2))
history = model.fit(x_train, y_train, batch_size=32, epochs=2, verbose=0)
print({k: round(v[-1], 4) for k, v in history.history.items()})
