"""Images of the graph scene: PNG, SVG, PDF, from the window (File > Export image…) and headless."""
