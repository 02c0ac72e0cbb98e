import { Debouncer, LatestRequest } from '../../extension/src/kernels/latest';

describe('LatestRequest', () => {
  it('keeps only the newest request current and aborts the one it replaces', () => {
    const latest = new LatestRequest();
    const first = latest.start();
    expect(first.isLatest()).toBe(true);
    const second = latest.start();
    expect(first.isLatest()).toBe(false);
    expect(first.signal.aborted).toBe(true);
    expect(second.isLatest()).toBe(true);
    expect(second.signal.aborted).toBe(false);
  });

  it('cancel makes the request in flight stale', () => {
    const latest = new LatestRequest();
    const ticket = latest.start();
    latest.cancel();
    expect(ticket.isLatest()).toBe(false);
    expect(ticket.signal.aborted).toBe(true);
  });
});

describe('Debouncer', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('calls once, delay ms after the last of a burst of edits', () => {
    const calls: number[] = [];
    const debouncer = new Debouncer(() => calls.push(Date.now()), 600);
    debouncer.schedule();
    jest.advanceTimersByTime(400);
    debouncer.schedule();
    jest.advanceTimersByTime(400);
    expect(calls).toHaveLength(0);
    expect(debouncer.pending).toBe(true);
    jest.advanceTimersByTime(200);
    expect(calls).toHaveLength(1);
    expect(debouncer.pending).toBe(false);
  });

  it('flush calls now and drops the scheduled call; cancel drops it silently', () => {
    let calls = 0;
    const debouncer = new Debouncer(() => calls++, 600);
    debouncer.schedule();
    debouncer.flush();
    expect(calls).toBe(1);
    jest.advanceTimersByTime(1000);
    expect(calls).toBe(1);
    debouncer.schedule();
    debouncer.cancel();
    jest.advanceTimersByTime(1000);
    expect(calls).toBe(1);
  });
});
