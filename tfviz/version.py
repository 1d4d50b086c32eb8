"""tfviz's version, in a module of its own: every layer names it, and the package itself
(``tfviz``) is the public API, which stands above them all."""

__version__ = "0.1.0"
