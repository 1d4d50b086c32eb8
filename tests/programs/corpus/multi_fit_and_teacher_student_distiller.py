"""Knowledge distillation: a CNN teacher is trained with fit for 2 epochs, then a smaller student is trained with fit through a Distiller whose custom train_step mixes the hard-label loss, the temperature-softened KL to the (frozen) teacher and a FitNets hint loss.

Pattern: Keras example "Knowledge Distillation" (Distiller(keras.Model), compile(optimizer, metrics, student_loss_fn, distillation_loss_fn, alpha, temperature), custom train_step; the teacher is trained first with its own fit and only read afterwards) plus the FitNets hint (Romero et al., ICLR 2015): a regressor maps the student's features to the teacher's
Family: multi-fit and teacher-student
Bug: the train step differentiates only self.student.trainable_variables, forgetting the Distiller's own hint regressor, which the loss reads but the optimizer never updates (teacher variables are legitimately frozen in both variants)
Step: 10
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--bug", action="store_true")
args = parser.parse_args()

rng = np.random.default_rng(0)
tf.keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: Keras 3 seeds its initializers from Python
x_train = rng.normal(size=(64, 12, 12, 1)).astype(np.float32)
y_train = (x_train[:, :6].mean(axis=(1, 2, 3)) > x_train[:, 6:].mean(axis=(1, 2, 3))).astype(np.int32)


class Distiller(tf.keras.Model):
    def __init__(self, student, teacher, hint_layer="features"):
        super().__init__()
        self.teacher = teacher
        self.student = student
        self.teacher_features = tf.keras.Model(teacher.inputs, teacher.get_layer(hint_layer).output)
        self.student_features = tf.keras.Model(student.inputs, student.get_layer(hint_layer).output)
        self.regressor = tf.keras.layers.Dense(teacher.get_layer(hint_layer).output.shape[-1], name="hint_regressor")

    def compile(self, optimizer, metrics, student_loss_fn, distillation_loss_fn, alpha=0.1, temperature=3,
                hint_weight=0.5):
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn = student_loss_fn
        self.distillation_loss_fn = distillation_loss_fn
        self.alpha = alpha
        self.temperature = temperature
        self.hint_weight = hint_weight

    def call(self, x):
        return self.student(x)

    def train_step(self, data):
        x, y = data
        teacher_predictions = self.teacher(x, training=False)
        teacher_hint = self.teacher_features(x, training=False)
        with tf.GradientTape() as tape:
            student_predictions = self.student(x, training=True)
            student_hint = self.regressor(self.student_features(x, training=True))
            student_loss = self.student_loss_fn(y, student_predictions)
            distillation_loss = self.distillation_loss_fn(
                tf.nn.softmax(teacher_predictions / self.temperature, axis=1),
                tf.nn.softmax(student_predictions / self.temperature, axis=1),
            ) * self.temperature ** 2
            hint_loss = tf.reduce_mean(tf.square(student_hint - teacher_hint))
            loss = self.alpha * student_loss + (1 - self.alpha) * distillation_loss + self.hint_weight * hint_loss
        trainable_vars = self.student.trainable_variables
        if not args.bug:
            trainable_vars = trainable_vars + self.regressor.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply_gradients(zip(gradients, trainable_vars))
        metrics = self.compute_metrics(x, y, student_predictions, sample_weight=None)
        return {**metrics, "student_loss": student_loss, "distillation_loss": distillation_loss,
                "hint_loss": hint_loss}


teacher = tf.keras.Sequential([
    tf.keras.Input(shape=(12, 12, 1)),
    tf.keras.layers.Conv2D(16, 3, strides=2, padding="same"),
    tf.keras.layers.LeakyReLU(negative_slope=0.2),
    tf.keras.layers.Conv2D(32, 3, strides=2, padding="same"),
    tf.keras.layers.GlobalAveragePooling2D(name="features"),
    tf.keras.layers.Dense(2),
], name="teacher")
student = tf.keras.Sequential([
    tf.keras.Input(shape=(12, 12, 1)),
    tf.keras.layers.Conv2D(8, 3, strides=2, padding="same"),
    tf.keras.layers.LeakyReLU(negative_slope=0.2),
    tf.keras.layers.GlobalAveragePooling2D(name="features"),
    tf.keras.layers.Dense(2),
], name="student")

teacher.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
                loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
teacher.fit(x_train, y_train, batch_size=16, epochs=2, verbose=0)

distiller = Distiller(student=student, teacher=teacher)
distiller.compile(optimizer=tf.keras.optimizers.Adam(1e-3), metrics=["accuracy"],
                  student_loss_fn=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  distillation_loss_fn=tf.keras.losses.KLDivergence(), alpha=0.1, temperature=10)
history = distiller.fit(x_train, y_train, batch_size=16, epochs=2, verbose=0)
print({k: round(float(v[-1]), 4) for k, v in history.history.items() if k != "loss"})
