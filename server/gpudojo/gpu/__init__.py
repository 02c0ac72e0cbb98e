"""GPU probing and telemetry: NVML or a replayed recording, plus host facts."""
