import { niceTicks } from '../../extension/src/memory/format';
import { timeTickLabels } from '../../extension/src/profile/format';

/** The labels the timeline draws for a view [t0, t1] µs from the trace's start, at ~`count` ticks. */
function axis(t0: number, t1: number, count = 10): string[] {
  const ticks = niceTicks(t0, t1, count);
  return timeTickLabels(ticks, ticks.length > 1 ? ticks[1] - ticks[0] : t1 - t0);
}

describe('profile time axis labels', () => {
  it('writes a six-notch zoom (a 301 µs window at 481 ms) at the step, not "481 ms" on every tick', () => {
    const labels = axis(481_000, 481_301);
    expect(labels[0]).toBe('481.00 ms');
    expect(labels[1]).toBe('481.05 ms');
    expect(new Set(labels).size).toBe(labels.length);
  });

  it('picks the unit and decimals from the span and the step', () => {
    expect(axis(0, 3_000_000, 6)).toEqual(['0.0 s', '0.5 s', '1.0 s', '1.5 s', '2.0 s', '2.5 s', '3.0 s']);
    expect(axis(0, 50_000, 5)).toEqual(['0 ms', '10 ms', '20 ms', '30 ms', '40 ms', '50 ms']);
    expect(axis(0, 500, 5)).toEqual(['0 µs', '100 µs', '200 µs', '300 µs', '400 µs', '500 µs']);
    expect(axis(0, 0.5, 5)).toEqual(['0 ns', '100 ns', '200 ns', '300 ns', '400 ns', '500 ns']);
    expect(axis(2_000_000, 2_000_010, 5)).toEqual([
      '2,000.000 ms',
      '2,000.002 ms',
      '2,000.004 ms',
      '2,000.006 ms',
      '2,000.008 ms',
      '2,000.010 ms'
    ]);
  });

  it('moves to a smaller unit rather than carry more than three decimals', () => {
    const labels = axis(481_000, 481_002, 10);
    expect(labels[0]).toBe('481,000.0 µs');
    expect(labels[1]).toBe('481,000.2 µs');
    const deep = axis(0, 0.5, 5).concat(axis(2_000_000, 2_000_000.5, 5));
    expect(deep[1]).toBe('100 ns');
    expect(deep[7]).toBe('2,000,000.1 µs');
  });

  it('never prints the same label on adjacent ticks, from seconds down to under a microsecond', () => {
    const starts = [0, 137, 481_000, 12_345_678, 59_999_999.5];
    const spans = [60_000_000, 3_000_000, 1_000_000, 250_000, 12_000, 3000, 301, 40, 7, 2, 0.9, 0.3, 0.05];
    for (const start of starts) {
      for (const span of spans) {
        for (const count of [2, 5, 9, 13]) {
          const labels = axis(start, start + span, count);
          labels.forEach((label, i) => {
            if (i > 0) {
              expect([start, span, count, label]).not.toEqual([start, span, count, labels[i - 1]]);
            }
          });
          expect(labels.every(l => /^-?[\d,]+(\.\d+)? (s|ms|µs|ns)$/.test(l))).toBe(true);
        }
      }
    }
  });

  it('handles a single tick and nothing at all', () => {
    expect(timeTickLabels([], 1)).toEqual([]);
    expect(timeTickLabels([1500], 0)).toEqual(['1.500 ms']);
  });
});
