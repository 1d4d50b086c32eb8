"""The graph: its group tree, layout, items, scene, view and image export."""
