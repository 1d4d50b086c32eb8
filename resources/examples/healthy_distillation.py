"""A healthy knowledge-distillation step: only the student trains.

`Distiller` is a `keras.Model` holding two separate models, `teacher` and
`student`. Its `train_step` runs the teacher inside the tape, so the
distillation loss (KL divergence between the softened teacher and student
predictions) reads the teacher's weights; it differentiates and updates
`self.student.trainable_variables` only. The teacher is left trainable on
purpose: it is a separate model that the step reads but does not train.

The labels come from the teacher itself (a randomly initialised network whose
argmax is the class), so the teacher is exact on this data and needs no
training of its own. `--epochs` (default 2).
"""

import argparse

import keras
import numpy as np
import tensorflow as tf

N_FEATURES = 10
N_CLASSES = 4


def mlp(name, width):
    return keras.Sequential(
        [
            keras.Input((N_FEATURES,)),
            keras.layers.Dense(width, activation="relu", name=f"{name}_hidden"),
            keras.layers.Dense(N_CLASSES, name=f"{name}_logits"),
        ],
        name=name,
    )


class Distiller(keras.Model):
    def __init__(self, teacher, student, alpha=0.3, temperature=3.0, **kwargs):
        super().__init__(**kwargs)
        self.teacher = teacher
        self.student = student
        self.alpha = alpha
        self.temperature = temperature
        self.student_loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.distillation_loss_fn = keras.losses.KLDivergence()
        self.loss_tracker = keras.metrics.Mean(name="loss")

    @property
    def metrics(self):
        return [self.loss_tracker]

    def call(self, x):
        return self.student(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            teacher_logits = self.teacher(x, training=False)
            student_logits = self.student(x, training=True)
            student_loss = self.student_loss_fn(y, student_logits)
            distillation_loss = (
                self.distillation_loss_fn(
                    tf.nn.softmax(teacher_logits / self.temperature),
                    tf.nn.softmax(student_logits / self.temperature),
                )
                * self.temperature**2
            )
            loss = self.alpha * student_loss + (1.0 - self.alpha) * distillation_loss
        grads = tape.gradient(loss, self.student.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.student.trainable_variables))
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    keras.utils.set_random_seed(0)
    teacher = mlp("teacher", 64)
    student = mlp("student", 8)
    x = np.random.default_rng(0).normal(size=(512, N_FEATURES)).astype("float32")
    y = np.argmax(teacher.predict(x, verbose=0), axis=1)

    distiller = Distiller(teacher, student, name="distiller")
    distiller.compile(optimizer=keras.optimizers.Adam(1e-2))
    distiller.fit(x, y, batch_size=64, epochs=args.epochs, verbose=2)
    accuracy = np.mean(np.argmax(student.predict(x, verbose=0), axis=1) == y)
    print(f"student agrees with the teacher on {accuracy:.0%} of the data")
