"""tfviz desktop app (PySide6). Never imports TensorFlow: analyses run in worker processes."""
