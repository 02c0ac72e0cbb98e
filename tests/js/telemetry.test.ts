import { ConnectionState, SocketLike, TelemetryStream } from '../../extension/src/api/telemetry';
import type { TelemetryMessage } from '../../extension/src/api/types';
import { sampleFrame } from './fixtures';

/** A socket the test drives by hand: open, message, close. */
class FakeSocket implements SocketLike {
  constructor(readonly hz: number) {}
  onopen: ((event: any) => void) | null = null;
  onclose: ((event: any) => void) | null = null;
  onerror: ((event: any) => void) | null = null;
  onmessage: ((event: any) => void) | null = null;
  readyState = 0;
  sent: any[] = [];
  closed = false;
  send(data: string) {
    this.sent.push(JSON.parse(data));
  }
  close() {
    this.closed = true;
    this.readyState = 3;
  }
  open() {
    this.readyState = 1;
    this.onopen?.({});
  }
  receive(data: string) {
    this.onmessage?.({ data });
  }
  drop() {
    this.readyState = 3;
    this.onclose?.({ code: 1006 });
  }
}

function setup(rateHz = 4) {
  const sockets: FakeSocket[] = [];
  const timers: Array<{ fn: () => void; ms: number }> = [];
  const stream = new TelemetryStream({
    rateHz,
    createSocket: hz => {
      const socket = new FakeSocket(hz);
      sockets.push(socket);
      return socket;
    },
    setTimeout: (fn, ms) => {
      timers.push({ fn, ms });
      return timers.length;
    },
    clearTimeout: () => undefined
  });
  const states: ConnectionState[] = [];
  stream.statusChanged.connect((_, status) => states.push(status.state));
  return { stream, sockets, timers, states };
}

describe('TelemetryStream', () => {
  it('asks for the configured rate and emits parsed messages', () => {
    const { stream, sockets } = setup(10);
    const messages: TelemetryMessage[] = [];
    stream.messageReceived.connect((_, m) => messages.push(m));
    stream.connect();
    expect(sockets[0].hz).toBe(10);
    sockets[0].open();
    sockets[0].receive(sampleFrame(1));
    expect(messages.map(m => m.type)).toEqual(['sample']);
    expect(stream.status.state).toBe('open');
  });

  it('reports frames it cannot parse instead of throwing', () => {
    const { stream, sockets } = setup();
    const errors: string[] = [];
    stream.protocolError.connect((_, e) => errors.push(e));
    stream.connect();
    sockets[0].open();
    sockets[0].receive('{"type":"bogus"}');
    expect(errors).toHaveLength(1);
  });

  it('reconnects with a doubling delay and resets it after a successful open', () => {
    const { stream, sockets, timers, states } = setup();
    stream.connect();
    sockets[0].drop();
    timers[0].fn();
    sockets[1].drop();
    timers[1].fn();
    sockets[2].drop();
    expect(timers.map(t => t.ms)).toEqual([500, 1000, 2000]);
    timers[2].fn();
    sockets[3].open();
    sockets[3].drop();
    expect(timers[3].ms).toBe(500);
    expect(states[0]).toBe('connecting');
    expect(states).toContain('reconnecting');
    expect(states).toContain('open');
  });

  it('sends pause, resume and rate controls while open', () => {
    const { stream, sockets } = setup();
    stream.connect();
    sockets[0].open();
    stream.pause();
    stream.resume();
    stream.setRate(8);
    expect(sockets[0].sent).toEqual([{ type: 'pause' }, { type: 'resume' }, { type: 'rate', hz: 8 }]);
  });

  it('re-applies pause and the latest rate after a reconnect', () => {
    const { stream, sockets, timers } = setup(4);
    stream.connect();
    sockets[0].open();
    stream.setRate(2);
    stream.pause();
    sockets[0].drop();
    timers[0].fn();
    expect(sockets[1].hz).toBe(2);
    sockets[1].open();
    expect(sockets[1].sent).toEqual([{ type: 'pause' }]);
  });

  it('stops for good when disposed', () => {
    const { stream, sockets, timers, states } = setup();
    stream.connect();
    sockets[0].open();
    stream.dispose();
    expect(sockets[0].closed).toBe(true);
    expect(timers).toHaveLength(0);
    expect(states[states.length - 1]).toBe('closed');
    stream.connect();
    expect(sockets).toHaveLength(1);
  });
});
