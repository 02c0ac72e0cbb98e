import { reconnectDelay } from '../../extension/src/api/backoff';

describe('reconnectDelay', () => {
  it('doubles from 0.5 s and caps at 10 s', () => {
    const schedule = Array.from({ length: 8 }, (_, attempt) => reconnectDelay(attempt));
    expect(schedule).toEqual([500, 1000, 2000, 4000, 8000, 10000, 10000, 10000]);
  });

  it('never goes below the first delay, even for odd attempt numbers', () => {
    expect(reconnectDelay(-3)).toBe(500);
    expect(reconnectDelay(1.7)).toBe(1000);
  });

  it('follows custom options', () => {
    expect(reconnectDelay(3, { initialMs: 100, maxMs: 500, factor: 3 })).toBe(500);
    expect(reconnectDelay(1, { initialMs: 100, maxMs: 500, factor: 3 })).toBe(300);
  });
});
