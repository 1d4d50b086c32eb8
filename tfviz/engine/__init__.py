"""The diagnosis: trace the target, build the op graph, decide every edge with
TensorFlow's gradient registry, judge each variable and say why in words."""
