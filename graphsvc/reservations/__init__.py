"""Reservations: atomic gang holds on GPUs with leases, and the events they raise."""
