/**
 * RunStream: one run's event websocket. It resumes after the last event seen
 * when the connection drops (backoff as the telemetry socket), and stops for
 * good once the run has ended: after a final status, a normal close by the
 * server (it closes with 1000 when the run is over) or an application close
 * code (4404: no such run). The socket lifecycle is ReconnectingSocket's;
 * this class adds the resume point, de-duplication of replayed events and the
 * end of the run. It takes a socket factory, so it runs without JupyterLab
 * (client.ts builds the real URL and WebSocket).
 */

import { ISignal, Signal } from '@lumino/signaling';
import { ReconnectingSocket, ReconnectingSocketOptions } from './reconnectingSocket';
import type { ConnectionStatus, SocketLike } from './reconnectingSocket';
import { FINAL_STATUSES, RunEvent, RunStatus, RunStreamMessage } from './runTypes';

/** A frame that is not a run stream message we understand. */
export class RunStreamProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunStreamProtocolError';
  }
}

const EVENT_TYPES = new Set(['log', 'metric', 'status', 'truncated']);

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

/** Parse one frame; throws RunStreamProtocolError saying what is wrong. */
export function parseRunStreamMessage(text: string): RunStreamMessage {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new RunStreamProtocolError('The run stream sent a frame that is not JSON');
  }
  if (!isObject(doc)) {
    throw new RunStreamProtocolError('The run stream sent a frame that is not an object');
  }
  if (doc.type === 'error' && isObject(doc.error)) {
    return {
      type: 'error',
      error: {
        code: String(doc.error.code ?? 'error'),
        message: String(doc.error.message ?? ''),
        detail: doc.error.detail ?? null
      }
    };
  }
  if (doc.type !== 'batch' || !Array.isArray(doc.events)) {
    throw new RunStreamProtocolError(`The run stream sent an unknown message (${String(doc.type)})`);
  }
  for (const event of doc.events) {
    if (!isObject(event) || !EVENT_TYPES.has(String(event.type)) || typeof event.seq !== 'number') {
      throw new RunStreamProtocolError('The run stream sent an event without a known type and a seq');
    }
    if (event.type === 'status' && !isObject(event.run)) {
      throw new RunStreamProtocolError('The run stream sent a status event without its run');
    }
  }
  return { type: 'batch', events: doc.events as RunEvent[] };
}

/** connecting/open/reconnecting as the telemetry socket; ended: the run is over and fully received. */
export type RunStreamState = ConnectionStatus['state'] | 'ended';

export interface RunStreamStatus extends Omit<ConnectionStatus, 'state'> {
  state: RunStreamState;
}

export interface RunStreamOptions extends ReconnectingSocketOptions {
  /** Open a socket that replays the events after seq `after` (-1: from the start). */
  createSocket: (after: number) => SocketLike;
  /** Timer functions, replaceable in tests. */
  setTimeout?: (fn: () => void, ms: number) => ReturnType<typeof setTimeout>;
  clearTimeout?: (handle: ReturnType<typeof setTimeout>) => void;
}

/** Close codes after which reconnecting cannot help: 1000 is the server's "run ended". */
function isFinalClose(code: number | undefined): boolean {
  return code === 1000 || (code !== undefined && code >= 4000 && code < 5000);
}

export class RunStream extends ReconnectingSocket<RunStreamMessage, RunStreamStatus> {
  constructor(options: RunStreamOptions) {
    super(options);
    this._createSocket = options.createSocket;
  }

  /** Each batch of new events (seq above every seq seen before), in order. */
  get batchReceived(): ISignal<this, RunEvent[]> {
    return this._batchReceived;
  }

  /** Frames that could not be parsed, and the server's errors (no such run). */
  get errorReported(): ISignal<this, string> {
    return this.protocolErrorSignal;
  }

  /** The highest seq received (-1 before any): where a reconnect resumes. */
  get lastSeq(): number {
    return this._lastSeq;
  }

  /** Start streaming after seq `after` (no-op when connected, waiting to retry or ended). */
  connect(after = -1): void {
    // `after` only counts when this call opens a socket.
    if (!this.canConnect()) {
      return;
    }
    this._lastSeq = Math.max(this._lastSeq, after);
    super.connect();
  }

  /** Every (re)connect resumes after the last event received. */
  protected openSocket(): SocketLike {
    return this._createSocket(this._lastSeq);
  }

  protected parseMessage(text: string): RunStreamMessage {
    return parseRunStreamMessage(text);
  }

  protected handleMessage(message: RunStreamMessage): void {
    if (message.type === 'error') {
      this.protocolErrorSignal.emit(message.error.message || message.error.code);
      return;
    }
    // A replay after a reconnect may repeat what arrived before the drop.
    const fresh = message.events.filter(e => e.seq > this._lastSeq);
    if (!fresh.length) {
      return;
    }
    this._lastSeq = fresh[fresh.length - 1].seq;
    if (fresh.some(e => e.type === 'status' && FINAL_STATUSES.has(e.run.status as RunStatus))) {
      this._sawFinal = true;
    }
    this._batchReceived.emit(fresh);
  }

  /** Once the run is over (final status seen, or a final close code) there is nothing left to resume. */
  protected shouldReconnect(event: any): boolean {
    const code = typeof event?.code === 'number' ? (event.code as number) : undefined;
    return !(this._sawFinal || isFinalClose(code));
  }

  protected onEnded(): void {
    this.setStatus({ state: 'ended', attempt: 0 });
  }

  private _createSocket: (after: number) => SocketLike;
  private _lastSeq = -1;
  private _sawFinal = false;
  private _batchReceived = new Signal<this, RunEvent[]>(this);
}
