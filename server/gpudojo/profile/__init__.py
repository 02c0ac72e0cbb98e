"""Profiles: torch.profiler / Kineto traces analysed into steps, breakdowns, findings and a windowed timeline."""
