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

    def counted(path, obj, *skip):  # each walk, whoever takes it, expands the model once
        if path == "model":
            walks.append(obj)
        return real(path, obj, *skip)

    monkeypatch.setattr(discover, "_attributes", counted)
    script = tmp_path / "frozen.py"
    script.write_text(FROZEN)
    report = analyze(str(script))
    assert len(walks) == 1
    w = next(r for r in report.variables if r.name == "w")
    assert w.kind == "frozen_copy" and "flat" in w.explanation
    assert {r.name for r in report.variables} >= {"w", "model.layers[0].kernel"}


WALKED = """
import tensorflow as tf

class Agent:
    def __init__(self):
        self.gamma, self.name, self.steps, self.done = 0.99, "agent", 3, None
        self.online = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2, name="q")])
        self.target = tf.keras.models.clone_model(self.online)
        self.target.trainable = False
        self.extra = {"scale": tf.Variable(1.0), "note": "kept", "n": 4, "pair": (tf.Variable(2.0), 0.5)}

inputs = tf.keras.Input((4,))
hidden = tf.keras.layers.Dense(3, activation="relu", name="hidden")(inputs)
frozen = tf.keras.layers.Dense(2, name="frozen")
frozen.trainable = False
model = tf.keras.Model(inputs, frozen(hidden))
agent = Agent()
module_vars = [tf.Variable([1.0, 2.0]), 7, "text", None, [tf.Variable(3.0), True]]
table = {"w": tf.Variable(0.5), "lr": 1e-3}
settings = {"epochs": 3, "name": "run"}
"""


def test_the_walk_without_plain_values_meets_every_other_object_on_the_same_path(monkeypatch):
    """The walk leaves out plain values (numbers, strings, None), which no reader of it asks
    about; its slow twin walks them too. Every other object is met on the same path in the
    same order, and the variables found, their names and the frozen ones are the same."""
    import tfviz.script.discover as discover

    module = _module(WALKED)
    fast = [(p, id(o)) for p, o in discover.iter_objects(module)]
    fast_vars = [(f.path, id(f.tf_variable)) for f in discover.find_variables(module)]
    fast_frozen = discover.frozen_variables(discover.ObjectWalk(module))
    monkeypatch.setattr(discover, "WALK_LEAVES", True)
    walked = list(discover.iter_objects(module))
    leaves = [(p, o) for p, o in walked if type(o) in discover._LEAVES]
    assert len(leaves) >= 20 and {"agent.gamma", "table['lr']", "module_vars[1]"} <= {p for p, _ in leaves}
    assert fast == [(p, id(o)) for p, o in walked if type(o) not in discover._LEAVES]
    assert fast_vars == [(f.path, id(f.tf_variable)) for f in discover.find_variables(module)]
    assert len(fast_vars) >= 8
    slow_frozen = discover.frozen_variables(discover.ObjectWalk(module))
    assert fast_frozen == slow_frozen and len(fast_frozen) == 4  # the frozen layer's and the target's
