import {
  ReconnectingSocket,
  ReconnectingSocketOptions,
  SocketLike
} from '../../extension/src/api/reconnectingSocket';

/** A socket the test drives by hand: open(), receive(), drop(). */
type FakeSocket = SocketLike & {
  sent: string[];
  closed: boolean;
  open(): void;
  receive(data: string): void;
  drop(code?: number): void;
};

function fakeSocket(): FakeSocket {
  const socket: FakeSocket = {
    onopen: null,
    onclose: null,
    onerror: null,
    onmessage: null,
    readyState: 0,
    sent: [],
    closed: false,
    send: data => void socket.sent.push(data),
    close: () => {
      socket.closed = true;
      socket.readyState = 3;
    },
    open: () => {
      socket.readyState = 1;
      socket.onopen?.({});
    },
    receive: data => socket.onmessage?.({ data }),
    drop: (code = 1006) => {
      socket.readyState = 3;
      socket.onclose?.({ code });
    }
  };
  return socket;
}

/** The smallest subclass: numbers as frames, close code 4000 ends it, "hello" on every open. */
class NumberSocket extends ReconnectingSocket<number> {
  constructor(options: ReconnectingSocketOptions, private _failOpens = 0) {
    super(options);
  }
  sockets: FakeSocket[] = [];
  received: number[] = [];
  opens = 0;
  ended = 0;
  send(data: unknown): boolean {
    return this.sendJson(data);
  }
  get errors() {
    return this.protocolErrorSignal;
  }
  protected openSocket(): SocketLike {
    if (this._failOpens > 0) {
      this._failOpens--;
      throw new Error('no socket');
    }
    const socket = fakeSocket();
    this.sockets.push(socket);
    return socket;
  }
  protected parseMessage(text: string): number {
    const value = Number(text);
    if (!Number.isFinite(value)) {
      throw new Error(`not a number: ${text}`);
    }
    return value;
  }
  protected handleMessage(message: number): void {
    this.received.push(message);
  }
  protected onOpen(): void {
    this.opens++;
    this.sendJson('hello');
  }
  protected shouldReconnect(event: any): boolean {
    return event?.code !== 4000;
  }
  protected onEnded(): void {
    this.ended++;
  }
}

function setup(failOpens = 0) {
  const timers: Array<{ fn: () => void; ms: number; cleared: boolean }> = [];
  const socket = new NumberSocket(
    {
      backoff: { initialMs: 100, maxMs: 350, factor: 2 },
      setTimeout: (fn, ms) => {
        timers.push({ fn, ms, cleared: false });
        return timers.length - 1;
      },
      clearTimeout: handle => {
        timers[handle].cleared = true;
      }
    },
    failOpens
  );
  const states: string[] = [];
  const errors: string[] = [];
  socket.statusChanged.connect((_, s) => states.push(s.state));
  socket.errors.connect((_, e) => errors.push(e));
  return { socket, timers, states, errors };
}

describe('ReconnectingSocket', () => {
  it('opens once, hands parsed frames over and reports the ones it cannot parse', () => {
    const { socket, states, errors } = setup();
    socket.connect();
    socket.connect();
    expect(socket.sockets).toHaveLength(1);
    socket.sockets[0].open();
    expect(socket.opens).toBe(1);
    expect(socket.sockets[0].sent).toEqual(['"hello"']);
    socket.sockets[0].receive('1');
    socket.sockets[0].receive('nope');
    socket.sockets[0].receive('2');
    expect(socket.received).toEqual([1, 2]);
    expect(errors).toEqual(['not a number: nope']);
    expect(states).toEqual(['connecting', 'open']);
  });

  it('retries with the backoff schedule and resets it after a good open', () => {
    const { socket, timers, states } = setup();
    socket.connect();
    socket.sockets[0].drop();
    expect(socket.status).toEqual({ state: 'reconnecting', attempt: 1, retryInMs: 100 });
    // Waiting to retry: connect() does not open a second socket.
    socket.connect();
    expect(socket.sockets).toHaveLength(1);
    timers[0].fn();
    socket.sockets[1].drop();
    timers[1].fn();
    socket.sockets[2].drop();
    expect(timers.map(t => t.ms)).toEqual([100, 200, 350]);
    timers[2].fn();
    socket.sockets[3].open();
    expect(socket.status).toEqual({ state: 'open', attempt: 0 });
    socket.sockets[3].drop();
    expect(timers[3].ms).toBe(100);
    expect(states.slice(0, 4)).toEqual(['connecting', 'reconnecting', 'reconnecting', 'reconnecting']);
  });

  it('counts a socket factory that throws as a failed attempt', () => {
    const { socket, timers } = setup(1);
    socket.connect();
    expect(socket.sockets).toHaveLength(0);
    expect(socket.status.state).toBe('reconnecting');
    timers[0].fn();
    expect(socket.sockets).toHaveLength(1);
  });

  it('sends only while open', () => {
    const { socket } = setup();
    expect(socket.send('x')).toBe(false);
    socket.connect();
    expect(socket.send('x')).toBe(false);
    socket.sockets[0].open();
    expect(socket.send('x')).toBe(true);
    expect(socket.sockets[0].sent).toEqual(['"hello"', '"x"']);
  });

  it('stops for good when the subclass says a close is final', () => {
    const { socket, timers } = setup();
    socket.connect();
    socket.sockets[0].open();
    socket.sockets[0].drop(4000);
    expect(socket.ended).toBe(1);
    expect(timers).toHaveLength(0);
    socket.connect();
    expect(socket.sockets).toHaveLength(1);
  });

  it('disposes: cancels the retry, closes the socket, reports closed, then stays quiet', () => {
    const { socket, timers, states } = setup();
    socket.connect();
    socket.sockets[0].drop();
    socket.dispose();
    expect(timers[0].cleared).toBe(true);
    expect(socket.isDisposed).toBe(true);
    expect(states[states.length - 1]).toBe('closed');
    socket.connect();
    expect(socket.sockets).toHaveLength(1);

    const other = setup();
    other.socket.connect();
    other.socket.sockets[0].open();
    other.socket.dispose();
    expect(other.socket.sockets[0].closed).toBe(true);
    expect(other.socket.sockets[0].onclose).toBeNull();
    expect(other.socket.status).toEqual({ state: 'closed', attempt: 0 });
    other.socket.dispose();
    expect(other.states.filter(s => s === 'closed')).toHaveLength(1);
  });
});
