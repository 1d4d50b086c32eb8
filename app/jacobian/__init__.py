"""The Jacobian panel: d out_i / d in_j between two tensors of the analyzed graph.

``JacobianController`` makes the panel (the window docks it), adds the graph's and the
Variables list's right-click entries, and talks to the worker's kept session;
``add_jacobian_actions`` fills any menu for a graph tensor. Qt and numpy only:
the window never imports TensorFlow.
"""

from .controller import JacobianController
from .menu import add_jacobian_actions

__all__ = ["JacobianController", "add_jacobian_actions"]
