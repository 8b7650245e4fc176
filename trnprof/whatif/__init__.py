"""What-if from a measured run: fit the Trn1 execution model's free parameters to the run's
steady-state steps, then predict the step of the same job changed (docs/whatif.md)."""

from .document import SCHEMA, Prepared, whatif

__all__ = ["SCHEMA", "Prepared", "whatif"]
