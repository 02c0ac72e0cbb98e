"""Tornado handlers: validation and mapping only; the services do the work."""
