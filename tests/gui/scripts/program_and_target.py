"""GUI test script: a training program that also defines a named target.

Run as a program, its first gradient step differentiates `w_main * stop_gradient(w_side)`,
so `w_side` gets no gradient (stop_gradient). The named target `probe()` uses both
weights, so both get one. The picker must switch between the two analyses.
"""
import tensorflow as tf

w_main = tf.Variable(2.0, name="w_main")
w_side = tf.Variable(3.0, name="w_side")


def probe():
    return w_main * w_side


if __name__ == "__main__":
    print("program mode: training", flush=True)
    optimizer = tf.keras.optimizers.SGD(0.1)
    for _ in range(2):
        with tf.GradientTape() as tape:
            value = w_main * tf.stop_gradient(w_side)
        grads = tape.gradient(value, [w_main, w_side])
        optimizer.apply_gradients([(g, v) for g, v in zip(grads, [w_main, w_side]) if g is not None])
