"""perfgate's version, in a module of its own: the modules that print it (the report's generator, the
User-Agent, ``--version``) import it from here, not from the package root, whose public names import them."""

__version__ = "0.1.0"
