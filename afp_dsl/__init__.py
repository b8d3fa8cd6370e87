"""afp: a declarative language, checker and interpreter for explainable LLM agents."""
from __future__ import annotations

__version__ = "0.1.0"
