"""Seed 2 as reported: a Keras layer reshapes its weight in build(), then model.fit.

build() runs once, eagerly, so `self.weights2` is a plain tensor computed from
the weight at that moment (a frozen copy); call() multiplies by the copy and the
FCLayer's own weight never gets a gradient. Only the MNIST download is replaced,
by random arrays of the same shapes and dtypes (fewer samples).

With Keras 3 (TF 2.21), plain `python` does not get through the first step.
Keras builds the model inside the first trace of its train step, where the
reshape is still connected to the weight; that trace creates the optimizer's
variables, so it is thrown away and the step is traced again. In the second
trace `weights2` is a tensor of the discarded graph: Keras warns
"UserWarning: Gradients do not exist for variables
['sequential/fc_layer/variable'] when minimizing the loss", and then fit
raises "InaccessibleTensorError: <tf.Tensor 'sequential/fc_layer/Reshape:0'
...> is out of scope and cannot be used here". Built eagerly first (a call on
one batch, outside any tape), the model trains, and
`sequential/fc_layer/variable` never gets a gradient while
`sequential/dense/kernel` and `sequential/dense/bias` do.
"""

import tensorflow as tf
import numpy as np

class FCLayer(tf.keras.layers.Layer):
    def __init__(self,output_size,cause_error = False):
        super(FCLayer,self).__init__()
        self.output_size = output_size
        self.cause_error = cause_error

    def build(self,input_shape): 
        self.input_size = input_shape[1]        
        weights = self.add_weight(shape=(self.input_size,
                                         self.output_size),
                                 initializer='random_normal',
                                 trainable=True)

        if self.cause_error:
            self.weights2 = tf.reshape( weights,
                                        shape = (self.input_size,
                                                 self.output_size))
        else:
            self.weights2 = weights

    def call(self, inputs):
        return tf.matmul(inputs, self.weights2)    

batch_size = 128
num_classes = 10
epochs = 2

# input image dimensions
img_rows, img_cols = 28, 28

# the data, split between train and test sets
# (synthetic stand-in for tf.keras.datasets.mnist.load_data(): same shapes and dtypes, fewer samples)
rng = np.random.default_rng(0)
(x_train, y_train), (x_test, y_test) = (
    (rng.integers(0, 256, (256, img_rows, img_cols), dtype=np.uint8), rng.integers(0, 10, 256, dtype=np.uint8)),
    (rng.integers(0, 256, (64, img_rows, img_cols), dtype=np.uint8), rng.integers(0, 10, 64, dtype=np.uint8)),
)


x_train = x_train.reshape(x_train.shape[0], img_rows* img_cols)
x_test = x_test.reshape(x_test.shape[0], img_rows*img_cols)
input_shape = (img_rows * img_cols)

x_train = x_train.astype('float32')
x_test = x_test.astype('float32')
x_train /= 255
x_test /= 255
print('x_train shape:', x_train.shape)
print(x_train.shape[0], 'train samples')
print(x_test.shape[0], 'test samples')

# convert class vectors to binary class matrices
y_train = tf.keras.utils.to_categorical(y_train, num_classes)
y_test = tf.keras.utils.to_categorical(y_test, num_classes)

model = tf.keras.models.Sequential()

dummy_layer = FCLayer(10, cause_error = True)
model.add( dummy_layer )
model.add( tf.keras.layers.Dense(10, activation='softmax') )

model.compile(loss=tf.keras.losses.categorical_crossentropy,
              optimizer=tf.keras.optimizers.Adadelta(),
              metrics=['accuracy'])

model.fit(x_train, y_train,
          batch_size=batch_size,
          epochs=epochs,
          verbose=1,
          validation_data=(x_test, y_test))
