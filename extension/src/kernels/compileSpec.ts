/** The toolbar's compile settings -> a CompileRequest, refusing what the server would refuse. */

import type { CompileOptions, CompileRequest, KernelLanguage } from '../api/types';
import { parseDefines } from './defines';
import { Parsed, RunForm, compileSignatures } from './runSpec';

/** The toolbar's compile settings. */
export interface CompileSettings {
  /** e.g. 'sm_90'; '' until the server's architectures are known. */
  arch: string;
  /** ptxas -O level, 0-3. */
  optLevel: number;
  /** -maxrregcount, or null for the compiler's choice. */
  maxRegisters: number | null;
  fastMath: boolean;
  /** "A=1 B=2" as typed. */
  defines: string;
}

export const DEFAULT_SETTINGS: Readonly<CompileSettings> = {
  arch: '',
  optLevel: 3,
  maxRegisters: null,
  fastMath: false,
  defines: ''
};

/** The compiler options of `settings` (defines only for CUDA C), or what is wrong with the defines. */
export function compileOptions(settings: CompileSettings, language: KernelLanguage): Parsed<CompileOptions> {
  const defines = language === 'cuda' ? parseDefines(settings.defines) : { defines: {}, errors: [] };
  if (defines.errors.length) {
    return { ok: false, error: `Defines: ${defines.errors.join('; ')}` };
  }
  return {
    ok: true,
    value: {
      opt_level: settings.optLevel,
      max_registers: settings.maxRegisters,
      fast_math: settings.fastMath,
      defines: defines.defines
    }
  };
}

/** What a compile is made of. */
export interface CompileInputs {
  source: string;
  language: KernelLanguage;
  settings: CompileSettings;
  /** The run fields: numba kernels get their argument types from them. */
  form: RunForm;
  /** Threads per block of the occupancy figure. */
  blockSize: number;
  /** Dynamic shared memory per block (bytes). */
  dynamicSharedBytes: number;
}

/** The CompileRequest of `inputs`, or why none can be sent (no arch yet, bad defines). */
export function buildCompileRequest(inputs: CompileInputs): Parsed<CompileRequest> {
  if (!inputs.settings.arch) {
    return { ok: false, error: 'No architecture chosen yet' };
  }
  const options = compileOptions(inputs.settings, inputs.language);
  if (!options.ok) {
    return options;
  }
  const request: CompileRequest = {
    source: inputs.source,
    language: inputs.language,
    arch: inputs.settings.arch,
    options: options.value,
    sass: true,
    block_size: inputs.blockSize,
    dynamic_shared_bytes: inputs.dynamicSharedBytes
  };
  if (inputs.language === 'numba') {
    request.signatures = compileSignatures(inputs.source, inputs.form);
  }
  return { ok: true, value: request };
}
