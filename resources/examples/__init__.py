"""The bundled example scripts: the start page lists them, and they install as
``tfviz.examples`` (package data), so a ``pip install`` has them too. Each is a program of
its own, run by tfviz, never imported from here."""
