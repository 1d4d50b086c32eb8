"""Seed 1: an SVD inside a tf.function whose shapes come from tf.shape.

Contracting two rows of a tensor network with a truncated SVD works forward,
but under GradientTape TensorFlow raises
"NotImplementedError: SVD gradient has not been implemented for input with
unknown inner matrix shape": the truncation makes the matrix shape unknown
when the function is traced.
"""

import tensorflow as tf

tf.random.set_seed(0)
upper = [tf.Variable(tf.random.uniform((5, 3, 3, 2, 1, 5), dtype=tf.float64)) for _ in range(3)]
lower = [tf.Variable(tf.random.uniform((5, 3, 3, 2, 1, 5), dtype=tf.float64)) for _ in range(3)]


def svd(tensor, pivot, max_singular_values=None, cutoff=0.0):
    left_dims = tf.shape(tensor)[:pivot]
    right_dims = tf.shape(tensor)[pivot:]
    tensor = tf.reshape(tensor, (tf.reduce_prod(left_dims), tf.reduce_prod(right_dims)))
    s, u, v = tf.linalg.svd(tensor)
    s_shape = tf.math.count_nonzero(tf.cast(s >= cutoff, dtype=tf.int32), dtype=tf.int32)
    keep = tf.maximum(tf.minimum(tf.constant(max_singular_values), s_shape), 1)
    s = tf.slice(s, [0], [keep])
    u = tf.slice(u, [0, 0], [tf.shape(u)[0], keep])
    v = tf.slice(v, [0, 0], [tf.shape(v)[0], keep])
    vh = tf.linalg.adjoint(v)
    dim_s = tf.shape(s)[0]
    u = tf.reshape(u, tf.concat([left_dims, [dim_s]], axis=-1))
    vh = tf.reshape(vh, tf.concat([[dim_s], right_dims], axis=-1))
    return u, tf.linalg.diag(s), vh


@tf.function
def contraction_step(network, max_singular_values: int):
    bottom, upper_row = network[-1], network[-2]

    def contract_up_down(up, dn):
        shu, shd = tf.shape(up), tf.shape(dn)
        c = tf.einsum("ijkxlm,nkpyqr->injpxylqmr", up, dn)
        return tf.reshape(c, (shu[0] * shd[0], shu[1], shd[2], shu[-3], shd[-3],
                              shu[-2] * shd[-2], shu[-1] * shd[-1]))

    new = []
    size = tf.shape(bottom[-1])[-1] * tf.shape(upper_row[-1])[-1]
    multiplier = tf.eye(size, dtype=upper_row[-1].dtype)
    for ix in reversed(range(len(bottom))):
        tensor = contract_up_down(upper_row[ix], bottom[ix])
        t = tf.einsum("ludpxor,ij->ludpxoj", tensor, multiplier)
        u, s, vh = svd(t, 1, max_singular_values=max_singular_values)
        multiplier = tf.tensordot(u, s / tf.norm(s), axes=(-1, 0))
        new.insert(0, vh)
    new[-1] = tf.tensordot(new[-1], multiplier, axes=(-1, 0))
    return new


def loss():
    contracted = contraction_step([upper, lower], 2)
    return tf.add_n([tf.reduce_sum(t) for t in contracted])


if __name__ == "__main__":
    with tf.GradientTape() as tape:
        value = loss()
    print(tape.gradient(value, upper + lower))  # raises NotImplementedError
