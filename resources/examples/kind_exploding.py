"""A deep linear stack initialised too large: the gradient grows on its way back to the input.

Twenty Dense layers without activation or normalization, each with weights of standard
deviation 0.3 on 64 inputs, so every layer multiplies the signal (and, backwards, the gradient)
by about 2.4. The first layers' biases get gradients 7 decades larger than those nearest
the loss: tfviz warns `exploding` for each more than 5 decades above them. The kernels'
gradients are huge too, and alike (each is its input's activations, which grow forward as
fast, times the gradient arriving): compared kernel with kernel, none stands out. (The loss
is huge too.)
"""

import keras
import tensorflow as tf

keras.utils.set_random_seed(0)
too_large = keras.initializers.RandomNormal(stddev=0.3)
stack = [keras.layers.Dense(64, kernel_initializer=too_large, name=f"linear_{i}") for i in range(20)]
model = keras.Sequential([keras.Input((64,)), *stack, keras.layers.Dense(1, name="out")])
x = tf.random.normal([32, 64])
y = tf.random.normal([32, 1])


def loss():
    return tf.reduce_mean((model(x) - y) ** 2)
