/**
 * The words of a .cu file's compile feedback in JupyterLab's editor: which files get it,
 * the request it sends, the mode label (what compiled it and where a run would go, as the
 * playground says it), and one line per kernel of its resources. Pure, so it is testable.
 */

import type { ArchList, CompileRequest, CompileResult, KernelReport } from '../api/types';
import { countDiagnostics } from './diagnostics';
import { formatBytes, formatMs, initialArch } from './format';

/** File name extensions of CUDA C++ sources (highlighted as C++). */
export const CUDA_EXTENSIONS: ReadonlyArray<string> = ['.cu', '.cuh'];

/** The mime type JupyterLab's language registry maps .cu and .cuh files to. */
export const CUDA_MIME = 'text/x-cuda-src';

/** Threads per block the occupancy figure of a file's kernels is computed for. */
export const FILE_BLOCK_SIZE = 256;

/** A CUDA C++ source or header, by its name. */
export function isCudaPath(path: string): boolean {
  const lower = path.toLowerCase();
  return CUDA_EXTENSIONS.some(ext => lower.endsWith(ext));
}

/** A .cu file, which is compiled as it is edited (a header alone has no kernels to compile). */
export function compilesAsItIsEdited(path: string): boolean {
  return path.toLowerCase().endsWith('.cu');
}

/** The compile request of a file's text: the playground's defaults, for this machine's GPU or the server's default arch. */
export function fileCompileRequest(source: string, archs: ArchList): CompileRequest {
  return {
    source,
    language: 'cuda',
    arch: initialArch(archs),
    options: { opt_level: 3, max_registers: null, fast_math: false, defines: {} },
    sass: false,
    block_size: FILE_BLOCK_SIZE,
    dynamic_shared_bytes: 0
  };
}

/** The mode label: the badge ('GPU' or 'CPU emulation') and what it means here. */
export interface FileMode {
  badge: 'GPU' | 'CPU emulation';
  detail: string;
}

/** Where this file's kernels would run and what compiled them, as the playground labels it. */
export function fileMode(archs: ArchList, result: CompileResult | null): FileMode {
  const compiler = result?.compiler ?? (archs.nvrtc_version ? `NVRTC ${archs.nvrtc_version}` : 'NVRTC');
  const arch = result?.arch ?? initialArch(archs);
  if (archs.gpu_arch) {
    return {
      badge: 'GPU',
      detail: `${compiler} for ${arch}, this machine's ${archs.gpu_name ?? 'GPU'}.`
    };
  }
  return {
    badge: 'CPU emulation',
    detail: `No GPU here: ${compiler} compiles for ${arch} (registers and spills are that GPU's); a run uses the CPU emulator, whose results are exact and whose times are not a GPU's.`
  };
}

/** The status words of a compile: "Compiled in 85 ms", "2 errors", "Compiling…". */
export function fileStatus(state: 'idle' | 'compiling' | 'ok' | 'error', result: CompileResult | null, problem: string | null): string {
  if (problem) {
    return problem;
  }
  if (state === 'compiling') {
    return 'Compiling…';
  }
  if (!result) {
    return 'Not compiled yet';
  }
  const counts = countDiagnostics(result.diagnostics);
  if (!result.ok) {
    return counts ? `Does not compile: ${counts}` : 'Does not compile (see the playground’s log)';
  }
  const done = result.cached ? 'Compiles (cached)' : `Compiled in ${formatMs(result.timings.compile_ms + result.timings.sass_ms)}`;
  return counts ? `${done}, ${counts}` : done;
}

/** "fused_bias_gelu: 18 registers, no spills, 0 B shared, occupancy 100% at 256 threads". */
export function kernelResources(kernel: KernelReport): string {
  const spilled = kernel.spill_stores_bytes + kernel.spill_loads_bytes;
  const spills = spilled
    ? `${formatBytes(kernel.spill_stores_bytes)} spill stores, ${formatBytes(kernel.spill_loads_bytes)} spill loads`
    : 'no spills';
  const occupancy = kernel.occupancy.error
    ? `cannot launch ${kernel.occupancy.block_size} threads: ${kernel.occupancy.error}`
    : `occupancy ${Math.round(kernel.occupancy.occupancy * 100)}% at ${kernel.occupancy.block_size} threads`;
  return `${kernel.name}: ${kernel.registers} registers, ${spills}, ${formatBytes(kernel.shared_bytes)} shared, ${occupancy}`;
}

/**
 * The run fields a file opens the playground with: its first kernel, and no arguments
 * (the starter's saxpy arguments would fit no other kernel; the learner writes them).
 */
export function fileRunPreset(source: string): { kernel: string; args: []; expected: Record<string, never> } | null {
  const found = /__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+([A-Za-z_]\w*)\s*\(/.exec(source);
  return found ? { kernel: found[1], args: [], expected: {} } : null;
}
