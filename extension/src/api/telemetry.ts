/**
 * TelemetryStream: a telemetry websocket that reconnects with exponential
 * backoff, parses frames and re-applies the subscriber's pause and rate after
 * every reconnect. It takes a socket factory, so it runs without JupyterLab
 * (client.ts builds the real URL and WebSocket).
 */

import { ISignal, Signal } from '@lumino/signaling';
import { BackoffOptions, DEFAULT_BACKOFF, reconnectDelay } from './backoff';
import { TelemetryProtocolError, parseTelemetryMessage } from './messages';
import type { TelemetryControl, TelemetryMessage } from './types';

/** The parts of a browser WebSocket the stream uses. */
export interface SocketLike {
  onopen: ((event: any) => void) | null;
  onclose: ((event: any) => void) | null;
  onerror: ((event: any) => void) | null;
  onmessage: ((event: any) => void) | null;
  readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** connecting: first attempt; open: streaming; reconnecting: waiting to retry; closed: disposed. */
export type ConnectionState = 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface ConnectionStatus {
  state: ConnectionState;
  /** Failed attempts since the last successful open (count). */
  attempt: number;
  /** When reconnecting: the wait before the next attempt (ms). */
  retryInMs?: number;
}

export interface TelemetryStreamOptions {
  /** Open a socket asking for `hz` samples per second. */
  createSocket: (hz: number) => SocketLike;
  /** Requested rate (Hz); the server clamps it. */
  rateHz?: number;
  backoff?: BackoffOptions;
  /** Timer functions, replaceable in tests. */
  setTimeout?: (fn: () => void, ms: number) => any;
  clearTimeout?: (handle: any) => void;
}

const OPEN = 1;

export class TelemetryStream {
  constructor(options: TelemetryStreamOptions) {
    this._createSocket = options.createSocket;
    this._rateHz = options.rateHz ?? 4;
    this._backoff = options.backoff ?? DEFAULT_BACKOFF;
    this._setTimeout = options.setTimeout ?? ((fn, ms) => setTimeout(fn, ms));
    this._clearTimeout = options.clearTimeout ?? (h => clearTimeout(h));
  }

  /** Every parsed message from the server, in order. */
  get messageReceived(): ISignal<this, TelemetryMessage> {
    return this._messageReceived;
  }

  /** Connection state changes. */
  get statusChanged(): ISignal<this, ConnectionStatus> {
    return this._statusChanged;
  }

  /** Frames that could not be parsed (the error's message). */
  get protocolError(): ISignal<this, string> {
    return this._protocolError;
  }

  get status(): ConnectionStatus {
    return this._status;
  }

  /** Whether the subscriber asked the server to pause. */
  get paused(): boolean {
    return this._paused;
  }

  /** The rate this subscriber asks for (Hz). */
  get rateHz(): number {
    return this._rateHz;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Open the socket (no-op when already open or waiting to retry). */
  connect(): void {
    if (this._isDisposed || this._socket || this._timer !== null) {
      return;
    }
    this._open();
  }

  /** Ask the server to stop sending samples to this subscriber. */
  pause(): void {
    this._paused = true;
    this._send({ type: 'pause' });
  }

  /** Ask the server to send samples again. */
  resume(): void {
    this._paused = false;
    this._send({ type: 'resume' });
  }

  /** Ask for a new rate (Hz); the server clamps it and answers with a state message. */
  setRate(hz: number): void {
    if (!Number.isFinite(hz) || hz <= 0) {
      return;
    }
    this._rateHz = hz;
    this._send({ type: 'rate', hz });
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    if (this._timer !== null) {
      this._clearTimeout(this._timer);
      this._timer = null;
    }
    const socket = this._socket;
    this._socket = null;
    if (socket) {
      socket.onopen = socket.onclose = socket.onerror = socket.onmessage = null;
      socket.close();
    }
    this._setStatus({ state: 'closed', attempt: this._attempt });
    Signal.clearData(this);
  }

  private _send(control: TelemetryControl): boolean {
    const socket = this._socket;
    if (!socket || socket.readyState !== OPEN) {
      // Re-applied on the next open.
      return false;
    }
    socket.send(JSON.stringify(control));
    return true;
  }

  private _open(): void {
    this._setStatus({
      state: this._attempt === 0 ? 'connecting' : 'reconnecting',
      attempt: this._attempt
    });
    let socket: SocketLike;
    try {
      socket = this._createSocket(this._rateHz);
    } catch (error) {
      this._scheduleReconnect();
      return;
    }
    this._socket = socket;
    socket.onopen = () => {
      this._attempt = 0;
      this._setStatus({ state: 'open', attempt: 0 });
      if (this._paused) {
        this._send({ type: 'pause' });
      }
    };
    socket.onmessage = event => {
      let message: TelemetryMessage;
      try {
        message = parseTelemetryMessage(String(event.data));
      } catch (error) {
        const text =
          error instanceof TelemetryProtocolError ? error.message : String(error);
        this._protocolError.emit(text);
        return;
      }
      this._messageReceived.emit(message);
    };
    socket.onerror = () => {
      // A close event always follows; reconnection is handled there.
    };
    socket.onclose = () => {
      socket.onopen = socket.onclose = socket.onerror = socket.onmessage = null;
      if (this._socket === socket) {
        this._socket = null;
      }
      this._scheduleReconnect();
    };
  }

  private _scheduleReconnect(): void {
    if (this._isDisposed) {
      return;
    }
    const delay = reconnectDelay(this._attempt, this._backoff);
    this._attempt++;
    this._setStatus({ state: 'reconnecting', attempt: this._attempt, retryInMs: delay });
    this._timer = this._setTimeout(() => {
      this._timer = null;
      if (!this._isDisposed) {
        this._open();
      }
    }, delay);
  }

  private _setStatus(status: ConnectionStatus): void {
    this._status = status;
    this._statusChanged.emit(status);
  }

  private _createSocket: (hz: number) => SocketLike;
  private _socket: SocketLike | null = null;
  private _rateHz: number;
  private _paused = false;
  private _attempt = 0;
  private _timer: any = null;
  private _backoff: BackoffOptions;
  private _setTimeout: (fn: () => void, ms: number) => any;
  private _clearTimeout: (handle: any) => void;
  private _isDisposed = false;
  private _status: ConnectionStatus = { state: 'connecting', attempt: 0 };
  private _messageReceived = new Signal<this, TelemetryMessage>(this);
  private _statusChanged = new Signal<this, ConnectionStatus>(this);
  private _protocolError = new Signal<this, string>(this);
}
