"""The old name of :mod:`triton_kitchen.budget` (the app-wide worker budget for lab runs)."""

from triton_kitchen.budget import LAB_BUDGET, BudgetBusy, WorkerBudget, default_workers

__all__ = ["LAB_BUDGET", "BudgetBusy", "WorkerBudget", "default_workers"]
