"""An Embedding looked up with repeated ids, trained one eager step.

Its gradient is an ``IndexedSlices`` that repeats id 1 four times and id 3
three times; the optimizer sums the repeated rows before applying them.
"""

import tensorflow as tf

emb = tf.keras.layers.Embedding(10, 4, embeddings_initializer="ones")
dense = tf.keras.layers.Dense(1, kernel_initializer="ones")
ids = tf.constant([[1, 1, 1, 2], [1, 3, 3, 3]])
opt = tf.keras.optimizers.SGD(0.1)
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(dense(tf.reduce_sum(emb(ids), axis=1)))
variables = emb.trainable_variables + dense.trainable_variables
grads = tape.gradient(loss, variables)
opt.apply_gradients(zip(grads, variables))
