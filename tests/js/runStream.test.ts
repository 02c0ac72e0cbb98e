import { RunStream, RunStreamState, parseRunStreamMessage } from '../../extension/src/api/runStream';
import type { SocketLike } from '../../extension/src/api/telemetry';
import type { RunEvent } from '../../extension/src/api/types';
import { batch, log, status } from './runsFixtures';

/** A socket the test drives by hand; it remembers the `after` it was opened with. */
class FakeSocket implements SocketLike {
  constructor(readonly after: number) {}
  onopen: ((event: any) => void) | null = null;
  onclose: ((event: any) => void) | null = null;
  onerror: ((event: any) => void) | null = null;
  onmessage: ((event: any) => void) | null = null;
  readyState = 0;
  closed = false;
  send(): void {
    throw new Error('the run stream sends nothing');
  }
  close() {
    this.closed = true;
  }
  open() {
    this.readyState = 1;
    this.onopen?.({});
  }
  receive(data: string) {
    this.onmessage?.({ data });
  }
  drop(code = 1006) {
    this.readyState = 3;
    this.onclose?.({ code });
  }
}

function setup() {
  const sockets: FakeSocket[] = [];
  const timers: Array<{ fn: () => void; ms: number }> = [];
  const stream = new RunStream({
    createSocket: after => {
      const socket = new FakeSocket(after);
      sockets.push(socket);
      return socket;
    },
    setTimeout: (fn, ms) => {
      timers.push({ fn, ms });
      return timers.length as unknown as ReturnType<typeof setTimeout>;
    },
    clearTimeout: () => undefined
  });
  const received: RunEvent[] = [];
  const states: RunStreamState[] = [];
  const errors: string[] = [];
  stream.batchReceived.connect((_, events) => received.push(...events));
  stream.statusChanged.connect((_, s) => states.push(s.state));
  stream.errorReported.connect((_, e) => errors.push(e));
  return { stream, sockets, timers, received, states, errors };
}

describe('RunStream', () => {
  it('replays from the start, then resumes after the last seq seen when the socket drops', () => {
    const { stream, sockets, timers, received } = setup();
    stream.connect(-1);
    expect(sockets[0].after).toBe(-1);
    sockets[0].open();
    sockets[0].receive(batch([status(0), log(1, 0, 'a'), log(2, 1, 'b')]));
    sockets[0].drop();
    expect(timers[0].ms).toBe(500);
    timers[0].fn();
    expect(sockets[1].after).toBe(2);
    sockets[1].open();
    // Whatever is replayed twice reaches the model once.
    sockets[1].receive(batch([log(2, 1, 'b'), log(3, 0, 'c')]));
    expect(received.map(e => e.seq)).toEqual([0, 1, 2, 3]);
    expect(stream.lastSeq).toBe(3);
  });

  it('backs off while the server is away, and resets after a good open', () => {
    const { stream, sockets, timers } = setup();
    stream.connect();
    sockets[0].drop();
    timers[0].fn();
    sockets[1].drop();
    timers[1].fn();
    expect(timers.map(t => t.ms)).toEqual([500, 1000]);
    sockets[2].open();
    sockets[2].drop();
    expect(timers[2].ms).toBe(500);
  });

  it('stops for good after the final status and the server’s close', () => {
    const { stream, sockets, timers, states } = setup();
    stream.connect();
    sockets[0].open();
    sockets[0].receive(batch([status(0, { status: 'running' }), status(1, { status: 'succeeded' })]));
    sockets[0].drop(1006);
    expect(timers).toHaveLength(0);
    expect(states[states.length - 1]).toBe('ended');
    stream.connect();
    expect(sockets).toHaveLength(1);
  });

  it('does not retry a run that does not exist', () => {
    const { stream, sockets, timers, errors, states } = setup();
    stream.connect();
    sockets[0].open();
    sockets[0].receive(JSON.stringify({ type: 'error', error: { code: 'not_found', message: "No run 'x'." } }));
    sockets[0].drop(4404);
    expect(errors).toEqual(["No run 'x'."]);
    expect(timers).toHaveLength(0);
    expect(states[states.length - 1]).toBe('ended');
  });

  it('reports frames it cannot read instead of throwing', () => {
    const { stream, sockets, errors, received } = setup();
    stream.connect();
    sockets[0].open();
    sockets[0].receive('not json');
    sockets[0].receive(JSON.stringify({ type: 'batch', events: [{ type: 'log' }] }));
    expect(errors).toHaveLength(2);
    expect(received).toHaveLength(0);
    expect(() => parseRunStreamMessage('{"type":"hello"}')).toThrow(/unknown message/);
  });

  it('closes its socket when disposed', () => {
    const { stream, sockets, states } = setup();
    stream.connect();
    stream.dispose();
    expect(sockets[0].closed).toBe(true);
    expect(states[states.length - 1]).toBe('closed');
  });
});
