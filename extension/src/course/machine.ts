/** What this machine can and cannot do for the course, in one line and its details (pure). */

import type { Catalog, DevicesResponse } from '../api/types';
import { runsHere } from './catalog';

export interface MachineSummary {
  /** e.g. "No GPU · 2 CPU cores: labs run on the CPU, CUDA-Python kernels in the simulator". */
  line: string;
  /** 'gpu', 'cpu' or 'replay' (the devices mode); 'unknown' before the first answer. */
  mode: 'gpu' | 'cpu' | 'replay' | 'unknown';
  /** The details behind the line, each "label: text". */
  details: Array<{ label: string; text: string }>;
}

function cores(n: number): string {
  return `${n} CPU core${n === 1 ? '' : 's'}`;
}

function gib(bytes: number): string {
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}

/** The machine as the course sees it, from GET gpu/devices and the catalog (which labs run how). */
export function machineSummary(devices: DevicesResponse | null, catalog: Catalog | null): MachineSummary {
  if (!devices) {
    return { line: 'Looking at this machine…', mode: 'unknown', details: [] };
  }
  const host = devices.host;
  const cpu = `${cores(host.cores_logical)}${host.cpu_model ? ` (${host.cpu_model})` : ''}, ${gib(host.memory_total_bytes)} RAM`;
  const details: MachineSummary['details'] = [];
  let line: string;
  const gpus = devices.mode === 'gpu' ? devices.gpus.length : 0;
  if (devices.mode === 'gpu') {
    const names = [...new Set(devices.gpus.map(g => g.name))].join(', ');
    line = `${gpus} GPU${gpus === 1 ? '' : 's'} (${names}) · ${cores(host.cores_logical)}: kernels, labs and memory snapshots run for real`;
    details.push({ label: 'GPU', text: `${gpus} × ${names}; driver ${devices.driver_version ?? 'unknown'}` });
  } else {
    const replay = devices.mode === 'replay';
    line = `${replay ? 'A replayed GPU recording, no GPU to run on' : 'No GPU'} · ${cores(host.cores_logical)}: labs run on the CPU, CUDA-Python kernels in the simulator`;
    details.push({
      label: 'GPU',
      text: replay
        ? `none to run on: the GPU monitor replays a recording of ${devices.gpus.length} GPU${devices.gpus.length === 1 ? '' : 's'}.`
        : `none. ${devices.reason ?? 'No NVIDIA driver found.'}`
    });
  }
  details.push({ label: 'CPU', text: cpu });
  if (catalog && catalog.labs.length) {
    const cpuLabs = catalog.labs.filter(l => runsHere(l, catalog.gpus ?? gpus).where === 'cpu').length;
    const gpuLabs = catalog.labs.filter(l => runsHere(l, catalog.gpus ?? gpus).where === 'gpu').length;
    const none = catalog.labs.length - cpuLabs - gpuLabs;
    const parts = [
      gpuLabs ? `${gpuLabs} on the GPU` : '',
      cpuLabs ? `${cpuLabs} on the CPU as their CPU path (torchrun labs through gloo)` : '',
      none ? `${none} not at all (GPU only)` : ''
    ].filter(Boolean);
    details.push({ label: 'Labs', text: `${parts.join(', ')}.` });
  }
  if (gpus) {
    details.push({
      label: 'Kernels',
      text: 'CUDA C compiles to PTX and SASS and runs on the GPU, timed with CUDA events; CUDA-Python kernels run on the GPU too.'
    });
  } else {
    details.push({
      label: 'Kernels',
      text:
        "CUDA C compiles to PTX and SASS with registers and occupancy and runs in gpudojo's CPU emulator (exact results, no GPU timing); CUDA-Python (numba) kernels run in the simulator (about 200 µs per thread: keep grids small)."
    });
    details.push({
      label: 'Cannot show',
      text: 'GPU timing, warps and races, NCCL, CUDA memory snapshots (the CPU profiler’s memory timeline stands in); lessons show GPU cells’ recorded output.'
    });
    details.push({ label: 'Exercises', text: 'checked in their CPU variant: requirements that need a GPU are skipped and say so.' });
  }
  return { line, mode: devices.mode, details };
}
