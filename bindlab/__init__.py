"""bindlab: attribute–object binding in vision–language embeddings (see README.md)."""

from bindlab.config import __version__

__all__ = ["__version__"]
