"""Two auto-named Dense layers and a Dropout, built lazily inside the step: Keras runs the
layer `dense` under the scope `dense_1`, the next layer's own name."""
import tensorflow as tf


class VQ(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.enc = tf.keras.layers.Dense(4)
        self.dec = tf.keras.layers.Dense(3)
        self.drop = tf.keras.layers.Dropout(0.1)

    def call(self, x):
        return self.dec(self.drop(self.enc(x)))


model = VQ()
opt = tf.keras.optimizers.Adam()


@tf.function
def step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x, training=True) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss


for _ in range(2):
    step(tf.ones([2, 5]))
