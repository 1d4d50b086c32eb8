"""The graph as a reader sees it, Qt-free: layers and models as nested groups
(:mod:`~tfviz.structure.hierarchy`), one display name per op and variable
(:mod:`~tfviz.structure.naming`), and the ways a gradient runs from a variable to the
target (:mod:`~tfviz.structure.gradient_path`). The window draws these; the exports and
``check``'s text can speak in the same terms."""
