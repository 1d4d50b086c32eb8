"""Laying out the group tree: layering, crossing reduction, x placement, Graphviz for small groups."""
