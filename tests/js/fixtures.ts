/** Builders of telemetry data shaped like the server's, for the tests. */

import type { GpuSample, TelemetrySample } from '../../extension/src/api/types';

export const GIB = 1024 ** 3;

export function gpuSample(index: number, fields: Partial<GpuSample> = {}): GpuSample {
  return {
    index,
    utilization_gpu_pct: 50,
    utilization_memory_pct: null,
    memory_used_bytes: 8 * GIB,
    memory_free_bytes: 72 * GIB,
    power_w: 200,
    temperature_c: 60,
    sm_clock_mhz: 1800,
    mem_clock_mhz: null,
    pcie_generation: null,
    pcie_width: null,
    pcie_tx_bytes_per_s: null,
    pcie_rx_bytes_per_s: null,
    processes: [],
    unsupported: [],
    ...fields
  };
}

export function sample(
  t: number,
  gpus: GpuSample[] = [gpuSample(0)],
  recordingT: number | null = null
): TelemetrySample {
  return {
    type: 'sample',
    t,
    recording_t: recordingT,
    host: { cpu_pct: 12.5, memory_used_bytes: 4 * GIB, memory_available_bytes: 12 * GIB },
    gpus
  };
}

/** A sample frame as the server sends it over the socket. */
export function sampleFrame(t: number, gpus?: GpuSample[]): string {
  return JSON.stringify(sample(t, gpus));
}
