/**
 * What the timeline's tooltip says: at once, the span's name, duration and
 * kind from the window in memory; then, for a real event (ref >= 0), its input
 * shapes and the top of its stack from GET profile/event. Plain lines here, so
 * the wording is tested without a DOM.
 */

import type { EventDetail, Span } from '../api/types';
import { formatCount, formatUs } from './format';

/** Stack frames shown, innermost first. */
export const STACK_LINES = 8;

export interface TooltipLine {
  /** 'name', 'duration', 'merged', 'shapes', 'stack', 'arg' (a class suffix and a test hook). */
  kind: string;
  text: string;
}

/** The lines known without asking the server. */
export function spanLines(span: Span, originUs: number): TooltipLine[] {
  const at = `at ${formatUs(span.t_us - originUs)}`;
  if (span.count > 1) {
    return [
      { kind: 'name', text: span.name },
      { kind: 'merged', text: `${formatCount(span.count)} spans under a pixel, merged (the longest named); zoom in to tell them apart` },
      { kind: 'duration', text: `${formatUs(span.dur_us)} covered, ${at}` }
    ];
  }
  return [
    { kind: 'name', text: span.name },
    { kind: 'duration', text: `${formatUs(span.dur_us)} · ${span.cat} · ${at}` }
  ];
}

/** Kineto args worth a line in a tooltip (the rest are in the downloaded trace). */
const ARGS_SHOWN = ['Sequence number', 'Fwd thread id', 'grid', 'block', 'registers per thread', 'shared memory', 'stream', 'bytes'];

/** The lines an event's detail adds: input shapes, the top of the stack, a few args. */
export function detailLines(detail: EventDetail, stackLimit = STACK_LINES): TooltipLine[] {
  const lines: TooltipLine[] = [];
  if (detail.input_shapes) {
    lines.push({ kind: 'shapes', text: `shapes ${detail.input_shapes}` });
  }
  const stack = detail.stack ?? [];
  for (const frame of stack.slice(0, stackLimit)) {
    lines.push({ kind: 'stack', text: frame });
  }
  if (stack.length > stackLimit) {
    lines.push({ kind: 'stack-more', text: `… ${stack.length - stackLimit} more frames` });
  }
  const args = detail.args ?? {};
  for (const name of ARGS_SHOWN) {
    if (args[name] !== undefined) {
      lines.push({ kind: 'arg', text: `${name}: ${args[name]}` });
    }
  }
  return lines;
}
