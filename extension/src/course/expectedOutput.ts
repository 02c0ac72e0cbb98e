/** How a lesson's GPU cell introduces its expected output: written from docs, or captured on a GPU. */

import type { LessonCell } from '../api/types';

/** The label above a GPU cell's expected output, saying where the text came from. */
export function expectedOutputLabel(cell: Pick<LessonCell, 'expected_kind' | 'expected_on' | 'expected_source'>): string {
  const on = cell.expected_on?.trim();
  if (cell.expected_kind === 'captured') {
    return `Output captured on ${on || 'a GPU'}`;
  }
  const source = cell.expected_source?.trim();
  if (cell.expected_kind === 'written' && source) {
    const forGpu = on ? ` for ${on}` : '';
    return `Expected output${forGpu}, written from ${source}: no GPU ran this`;
  }
  return `Expected output${on ? ` on ${on}` : ''}: this cell needs a GPU and was not run here`;
}
