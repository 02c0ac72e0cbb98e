import { byteTicks, formatAxisTime, formatBytes, formatDelta, formatFrame, formatInterval, niceTicks } from '../../extension/src/memory/format';

describe('formatBytes', () => {
  it('uses binary units as the allocator counts', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(4096)).toBe('4.00 KiB');
    expect(formatBytes(3 << 20)).toBe('3.00 MiB');
    expect(formatBytes(8 * 2 ** 30)).toBe('8.00 GiB');
    expect(formatBytes(150 * 2 ** 20)).toBe('150 MiB');
    expect(formatBytes(-2048)).toBe('-2.00 KiB');
  });
  it('signs deltas', () => {
    expect(formatDelta(1 << 20)).toBe('+1.00 MiB');
    expect(formatDelta(-512)).toBe('-512 B');
    expect(formatDelta(0)).toBe('0 B');
  });
});

describe('formatAxisTime', () => {
  it('counts wall clock from the capture start in µs, ms or s', () => {
    expect(formatAxisTime(1_000_850, 'time_us', 1_000_000)).toBe('850 µs');
    expect(formatAxisTime(1_012_500, 'time_us', 1_000_000)).toBe('12.5 ms');
    expect(formatAxisTime(4_200_000, 'time_us', 1_000_000)).toBe('3.20 s');
  });
  it('names events on the event-index axis', () => {
    expect(formatAxisTime(1234, 'event_index')).toBe('event 1234');
    expect(formatInterval(10, 52, 'event_index', 0)).toBe('event 10 → event 52 (42 events)');
  });
});

describe('frames and ticks', () => {
  it('writes a frame as file:line name', () => {
    expect(formatFrame({ filename: '/home/me/train.py', line: 42, name: 'forward' })).toBe('train.py:42 forward');
    expect(formatFrame(null)).toBe('no user frame');
  });
  it('picks round ticks', () => {
    expect(niceTicks(0, 100, 5)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(byteTicks(3 * 2 ** 30, 3)).toEqual([0, 2 ** 30, 2 * 2 ** 30, 3 * 2 ** 30]);
  });
});
