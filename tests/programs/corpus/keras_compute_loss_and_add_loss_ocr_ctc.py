"""A captcha OCR model: convolutions, a reshape to a sequence, two bidirectional LSTMs and a CTC loss that a layer adds with add_loss; compiled without a loss and trained with fit.

Pattern: Keras example "OCR model for reading Captchas" (CTCLayer calling add_loss in call, Input "label" fed to the layer, compile(optimizer=Adam()) without a loss, fit on a dataset of dicts)
Family: Keras compute_loss and add_loss
"""


import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers

WIDTH, HEIGHT, LABEL_LEN, CHARS, BATCH = 200, 50, 5, 19, 16

keras.utils.set_random_seed(0)  # Python, NumPy and TensorFlow: the truth run draws the same numbers
rng = np.random.default_rng(0)
images = rng.random((BATCH * 4, WIDTH, HEIGHT, 1), dtype=np.float32)
labels = rng.integers(1, CHARS + 1, (BATCH * 4, LABEL_LEN)).astype("int64")


class CTCLayer(layers.Layer):
    def call(self, y_true, y_pred):
        batch = tf.shape(y_pred)[0]
        steps = tf.shape(y_pred)[1]
        logit_length = tf.fill([batch], steps)
        label_length = tf.fill([batch], tf.shape(y_true)[1])
        loss = tf.nn.ctc_loss(
            labels=tf.cast(y_true, tf.int32),
            logits=tf.math.log(y_pred + 1e-7),
            label_length=label_length,
            logit_length=logit_length,
            logits_time_major=False,
            blank_index=-1,
        )
        self.add_loss(tf.reduce_mean(loss))
        return y_pred


def build_model():
    input_img = layers.Input(shape=(WIDTH, HEIGHT, 1), name="image", dtype="float32")
    label = layers.Input(name="label", shape=(None,), dtype="int64")
    conv = dict(activation="relu", kernel_initializer="he_normal", padding="same")
    x = layers.Conv2D(32, (3, 3), name="Conv1", **conv)(input_img)
    x = layers.MaxPooling2D((2, 2), name="pool1")(x)
    x = layers.Conv2D(64, (3, 3), name="Conv2", **conv)(x)
    x = layers.MaxPooling2D((2, 2), name="pool2")(x)
    x = layers.Reshape(target_shape=((WIDTH // 4), (HEIGHT // 4) * 64), name="reshape")(x)
    x = layers.Dense(64, activation="relu", name="dense1")(x)
    x = layers.Dropout(0.2)(x)
    x = layers.Bidirectional(layers.LSTM(128, return_sequences=True, dropout=0.25))(x)
    x = layers.Bidirectional(layers.LSTM(64, return_sequences=True, dropout=0.25))(x)
    x = layers.Dense(CHARS + 1, activation="softmax", name="dense2")(x)
    output = CTCLayer(name="ctc_loss")(label, x)
    model = keras.models.Model(inputs=[input_img, label], outputs=output, name="ocr_model_v1")
    model.compile(optimizer=keras.optimizers.Adam())
    return model


model = build_model()

if __name__ == "__main__":
    dataset = tf.data.Dataset.from_tensor_slices({"image": images, "label": labels}).batch(BATCH)
    history = model.fit(dataset, epochs=1, steps_per_epoch=1, verbose=2)
    print("loss:", history.history["loss"][-1])
