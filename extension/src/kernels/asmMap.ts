/**
 * Source line <-> assembly line: which PTX lines and SASS instructions came
 * from a source line, and which source line an assembly line came from.
 */

import type { SassInstruction } from '../api/types';

/** Both directions of one listing's line mapping. Source lines are 1-based; asm indexes 0-based. */
export class SourceAsmMap {
  /** `sourceLines[i]` is the source line of assembly line `i` (null when unknown). */
  constructor(sourceLines: ReadonlyArray<number | null | undefined>) {
    this._sourceOf = sourceLines.map(line => (typeof line === 'number' && line > 0 ? line : null));
    for (let i = 0; i < this._sourceOf.length; i++) {
      const line = this._sourceOf[i];
      if (line === null) {
        continue;
      }
      const list = this._asmOf.get(line);
      if (list) {
        list.push(i);
      } else {
        this._asmOf.set(line, [i]);
      }
    }
  }

  /** The map of a PTX listing, from CompileResult.ptx_lines. */
  static fromPtx(ptxLines: ReadonlyArray<number | null>): SourceAsmMap {
    return new SourceAsmMap(ptxLines);
  }

  /** The map of one kernel's SASS, from its instructions' `line`. */
  static fromSass(sass: ReadonlyArray<SassInstruction>): SourceAsmMap {
    return new SourceAsmMap(sass.map(instruction => instruction.line ?? null));
  }

  /** Number of assembly lines. */
  get length(): number {
    return this._sourceOf.length;
  }

  /** Assembly line indexes (0-based, ascending) that came from `sourceLine` (1-based). */
  asmLinesOf(sourceLine: number): ReadonlyArray<number> {
    return this._asmOf.get(sourceLine) ?? EMPTY;
  }

  /** The source line (1-based) of assembly line `index` (0-based), or null. */
  sourceLineOf(index: number): number | null {
    return this._sourceOf[index] ?? null;
  }

  /** True when any assembly line names its source line (the compiler emitted line info). */
  get hasLineInfo(): boolean {
    return this._asmOf.size > 0;
  }

  private _sourceOf: Array<number | null>;
  private _asmOf = new Map<number, number[]>();
}

const EMPTY: ReadonlyArray<number> = Object.freeze([]);

/**
 * Split a PTX text into the lines that CompileResult.ptx_lines counts.
 *
 * One trailing newline does not make an extra line.
 */
export function splitListing(text: string): string[] {
  if (!text) {
    return [];
  }
  const lines = text.split(/\r?\n/);
  if (lines.length > 1 && lines[lines.length - 1] === '') {
    lines.pop();
  }
  return lines;
}
