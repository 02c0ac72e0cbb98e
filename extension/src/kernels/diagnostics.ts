/**
 * Compiler diagnostics -> what the editor marks: one line decoration per
 * diagnosed line (the worst severity wins) and an underline under the code the
 * diagnostic points at. Pure: works on line texts, so it is testable without an editor.
 */

import type { Diagnostic, DiagnosticSeverity } from '../api/types';

/** The lines of a document as the editor numbers them (1-based) with their offsets. */
export interface LineSource {
  readonly lines: number;
  line(n: number): { from: number; to: number; text: string };
}

/** What to draw for one diagnosed line. Offsets are document offsets; lines 1-based. */
export interface DiagnosticMark {
  line: number;
  /** Offset of the line's start (where the line decoration goes). */
  lineFrom: number;
  severity: DiagnosticSeverity;
  /** Every message on this line, worst first. */
  messages: string[];
  /** Underlined ranges [from, to), never empty, sorted. */
  underlines: Array<{ from: number; to: number; severity: DiagnosticSeverity }>;
}

const SEVERITY_RANK: Record<DiagnosticSeverity, number> = { error: 0, warning: 1, note: 2 };

/** The more serious of two severities. */
export function worstSeverity(a: DiagnosticSeverity, b: DiagnosticSeverity): DiagnosticSeverity {
  return SEVERITY_RANK[a] <= SEVERITY_RANK[b] ? a : b;
}

/** "message" prefixed by its severity, as the list and the hover show it. */
export function describeDiagnostic(diagnostic: Diagnostic): string {
  const where = diagnostic.line ? `line ${diagnostic.line}${diagnostic.column ? `:${diagnostic.column}` : ''}: ` : '';
  return `${where}${diagnostic.severity}: ${diagnostic.message}`;
}

/**
 * The range to underline on one line (offsets within `text`, 0-based), or null for a blank line.
 *
 * With a column: the identifier or symbol run starting there (compilers point
 * at the token). Without one: the line from its first to its last non-blank.
 */
export function underlineSpan(text: string, column: number | null | undefined): [number, number] | null {
  const start = text.search(/\S/);
  if (start < 0) {
    return null;
  }
  const end = text.replace(/\s+$/, '').length;
  if (!column || column < 1) {
    return [start, end];
  }
  let from = Math.min(column - 1, text.length);
  if (from >= end) {
    // Past the code (e.g. "expected ';'" at the end of the line): mark the last character.
    return [end - 1, end];
  }
  if (/\s/.test(text[from])) {
    from = from + (text.slice(from).search(/\S/));
  }
  const rest = text.slice(from);
  const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest) ?? /^[0-9][0-9A-Za-z_.]*/.exec(rest);
  const length = word ? word[0].length : 1;
  return [from, from + length];
}

/**
 * Group diagnostics by line and compute their marks; diagnostics without a
 * line, or past the end of the document, get none (the list still shows them).
 */
export function diagnosticMarks(diagnostics: ReadonlyArray<Diagnostic>, doc: LineSource): DiagnosticMark[] {
  const byLine = new Map<number, Diagnostic[]>();
  for (const diagnostic of diagnostics) {
    const line = diagnostic.line;
    if (!line || line < 1 || line > doc.lines) {
      continue;
    }
    const list = byLine.get(line);
    if (list) {
      list.push(diagnostic);
    } else {
      byLine.set(line, [diagnostic]);
    }
  }
  const marks: DiagnosticMark[] = [];
  for (const line of [...byLine.keys()].sort((a, b) => a - b)) {
    const list = byLine.get(line)!.slice().sort((a, b) => SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity]);
    const { from, text } = doc.line(line);
    const underlines: DiagnosticMark['underlines'] = [];
    for (const diagnostic of list) {
      const span = underlineSpan(text, diagnostic.column);
      if (span) {
        underlines.push({ from: from + span[0], to: from + span[1], severity: diagnostic.severity });
      }
    }
    underlines.sort((a, b) => a.from - b.from || a.to - b.to);
    marks.push({
      line,
      lineFrom: from,
      severity: list[0].severity,
      messages: list.map(d => `${d.severity}: ${d.message}`),
      underlines
    });
  }
  return marks;
}

/** "2 errors, 1 warning" (notes are not counted), or '' when there are none. */
export function countDiagnostics(diagnostics: ReadonlyArray<Diagnostic>): string {
  const errors = diagnostics.filter(d => d.severity === 'error').length;
  const warnings = diagnostics.filter(d => d.severity === 'warning').length;
  const parts: string[] = [];
  if (errors) {
    parts.push(`${errors} error${errors === 1 ? '' : 's'}`);
  }
  if (warnings) {
    parts.push(`${warnings} warning${warnings === 1 ? '' : 's'}`);
  }
  return parts.join(', ');
}
