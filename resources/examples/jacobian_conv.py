"""A conv layer's Jacobian, sliced by dimension: one image, one channel, one filter.

    images (8, 28, 28, 1) -> Conv2D(16, 5x5, relu) -> (8, 24, 24, 16) -> Dense(10) -> loss

J(conv output, kernel) is (8, 24, 24, 16) x (5, 5, 1, 16): 73,728 x 400
elements. Each output element reads one image and one filter, so the matrix is
sparse and structured: slice it per dimension instead of by flat ranges,

    tfviz jacobian jacobian_conv.py --of convnet/conv/Relu --wrt convnet/conv/kernel \
        --of-index 0,:,:,:
    tfviz jacobian jacobian_conv.py --of convnet/conv/Relu --wrt convnet/conv/kernel \
        --of-index 0,:,:,3 --wrt-index :,:,:,3

(in the app: right-click the conv layer's Relu, "Jacobian of this w.r.t. …", then
pick an index per dimension above the heatmap). One batch element is 1/8 of
the rows; reverse mode differentiates only the selected outputs. ``tfviz check``
reports ok.
"""

import keras
import tensorflow as tf

keras.utils.set_random_seed(0)  # the same weights and data on every run
model = keras.Sequential(
    [
        keras.Input((28, 28, 1)),
        keras.layers.Conv2D(16, 5, activation="relu", name="conv"),
        keras.layers.Flatten(name="flat"),
        keras.layers.Dense(10, name="logits"),
    ],
    name="convnet",
)
images = tf.random.uniform([8, 28, 28, 1])  # batch 8 of synthetic 28x28 images
labels = tf.random.uniform([8], maxval=10, dtype=tf.int32)
ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def loss():
    return ce(labels, model(images, training=True))
