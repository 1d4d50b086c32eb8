"""Per-element Jacobians between tensors of an analyzed graph.

``tape.gradient`` and ``tf.gradients`` sum over the target's elements, so
gradient "parts" do not multiply back into the whole (the seed-3 question).
This package computes the full Jacobian d out_i / d in_j of any float tensor
of the traced graph with respect to a variable or an upstream tensor, and the
chain-rule split J(y,h) @ J(h,x) == J(y,x).

- :mod:`tfviz.jacobian.data`: plain-data results and their JSON encoding;
- :mod:`tfviz.jacobian.names`: which graph tensor or variable a name means;
- :mod:`tfviz.jacobian.compute`: reverse/forward mode, chunks, memory guard;
- :mod:`tfviz.jacobian.chain`: the chain-rule split and the tf.gradients sum;
- :mod:`tfviz.jacobian.session`: the analyzed script kept alive for requests
  (the worker's loop that serves them is :mod:`tfviz.worker.session`);
- :mod:`tfviz.jacobian.png`, :mod:`tfviz.jacobian.files`: files (the command is
  :mod:`tfviz.commands.jacobian`).

Nothing here imports Qt. TensorFlow is imported lazily, inside functions.
"""
