"""Variable names: the most readable Python path wins over a position in an aggregate list."""

from __future__ import annotations

import types

GAN = """
import tensorflow as tf

def make(name, prefix):
    return tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(4, name=prefix + "_dense1"),
                                tf.keras.layers.Dense(1, name=prefix + "_dense2")], name=name)
{models}
all_trainable = {aggregate}
"""


def _module(source: str) -> types.ModuleType:
    module = types.ModuleType("gan_script")
    exec(compile(source, "gan_script.py", "exec"), module.__dict__)  # noqa: S102 - our own text
    return module


def _names(module: types.ModuleType) -> dict[int, str]:
    from tfviz.script.discover import find_variables

    return {id(f.tf_variable): f.path for f in find_variables(module)}


def _tf_var(v):
    return getattr(v, "value", v)


def test_attribute_path_beats_a_module_level_list():
    module = _module(
        GAN.format(
            models='generator = make("generator", "g")\ndiscriminator = make("discriminator", "d")',
            aggregate="generator.trainable_variables + discriminator.trainable_variables",
        )
    )
    names = _names(module)
    assert len(names) == 8
    kernel = _tf_var(module.generator.layers[1].kernel)
    assert names[id(kernel)] == 'generator.get_layer("g_dense2").kernel'  # the name the program gave it
    assert not any(n.startswith("all_trainable") for n in names.values())


def test_keras_path_when_only_the_list_is_global():
    module = _module(
        GAN.format(
            models="",
            aggregate='make("generator", "g").trainable_variables'
            ' + make("discriminator", "d").trainable_variables',
        )
    )
    names = sorted(_names(module).values())
    assert "discriminator/d_dense1/kernel" in names and "generator/g_dense2/bias" in names
    assert not any(n.startswith("all_trainable") for n in names)


def test_bare_variables_in_a_list_keep_their_position():
    module = _module(
        "import tensorflow as tf\nupper = [tf.Variable(1.0), tf.Variable(2.0)]\nalias = upper[1]\n"
    )
    assert sorted(_names(module).values()) == ["alias", "upper[0]"]


NAMED = """
import tensorflow as tf

class Encoder(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(4)
        self.z_mean = tf.keras.layers.Dense(2, name="z_mean")

    def call(self, x):
        return self.z_mean(self.hidden(x))

inputs = tf.keras.Input((3,))
h = tf.keras.layers.Dense(4)(inputs)
functional = tf.keras.Model(inputs, [tf.keras.layers.Dense(2, name="z_log_var")(h),
                                     tf.keras.layers.Dense(2)(h)])
encoder = Encoder()
encoder(tf.zeros((1, 3)))
"""


def test_names_prefer_attributes_then_the_programs_layer_names_then_positions():
    module = types.ModuleType("named_script")
    exec(compile(NAMED, "named_script.py", "exec"), module.__dict__)  # noqa: S102 - our own text
    names = set(_names(module).values())
    assert "encoder.z_mean.kernel" in names  # an attribute path first
    assert 'functional.get_layer("z_log_var").kernel' in names  # then the layer's given name
    assert "functional.layers[1].kernel" in names  # a name Keras made up says nothing: its position
    assert not any("dense_" in n for n in names)


FROZEN = """
import tensorflow as tf

w = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="w")
flat = tf.reshape(w, [-1])  # a frozen copy, held by the script
model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
x = tf.ones([3, 2])


def loss():
    return tf.reduce_sum(model(x)) + tf.reduce_sum(flat)
"""


def test_one_walk_of_the_scripts_objects_serves_the_whole_analysis(tmp_path, monkeypatch):
    # Finding the variables, naming what the step captured (the frozen copy's holder) and
    # finding each variable's owners (the review) each walked a large model again.
    import tfviz.script.discover as discover
    from tfviz.analysis.diagnose import analyze

    walks = []
    real = discover._attributes

    def counted(path, obj):  # each walk, whoever takes it, expands the model once
        if path == "model":
            walks.append(obj)
        return real(path, obj)

    monkeypatch.setattr(discover, "_attributes", counted)
    script = tmp_path / "frozen.py"
    script.write_text(FROZEN)
    report = analyze(str(script))
    assert len(walks) == 1
    w = next(r for r in report.variables if r.name == "w")
    assert w.kind == "frozen_copy" and "flat" in w.explanation
    assert {r.name for r in report.variables} >= {"w", "model.layers[0].kernel"}
