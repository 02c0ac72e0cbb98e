/**
 * ReconnectingSocket: the socket lifecycle shared by the server's websockets
 * (telemetry, run events). It owns one socket at a time, retries with the
 * backoff schedule of backoff.ts after a drop, reports its state and the
 * frames it cannot parse, and tears everything down on dispose. Subclasses
 * say how to open the next socket (its URL carries their state, e.g. the
 * rate or the seq to resume after), how to parse and handle a frame, and
 * whether a close means "reconnect" or "done for good".
 *
 * It takes its socket from the subclass and its timers from the options, so
 * it runs without JupyterLab or real time (tests drive both by hand).
 */

import { ISignal, Signal } from '@lumino/signaling';
import { BackoffOptions, DEFAULT_BACKOFF, reconnectDelay } from './backoff';

/** The parts of a browser WebSocket the streams use. */
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

/**
 * What a subclass's status must at least carry. A subclass may add states of
 * its own (the run stream's 'ended'); the base only ever sets the four of
 * ConnectionState.
 */
export interface SocketStatus {
  state: string;
  attempt: number;
  retryInMs?: number;
}

export interface ReconnectingSocketOptions {
  backoff?: BackoffOptions;
  /** Timer functions, replaceable in tests. */
  setTimeout?: (fn: () => void, ms: number) => any;
  clearTimeout?: (handle: any) => void;
}

/** WebSocket.OPEN, spelled out since SocketLike need not be a WebSocket. */
const OPEN = 1;

export abstract class ReconnectingSocket<TMessage, TStatus extends SocketStatus = ConnectionStatus> {
  constructor(options: ReconnectingSocketOptions) {
    this._backoff = options.backoff ?? DEFAULT_BACKOFF;
    this._setTimeout = options.setTimeout ?? ((fn, ms) => setTimeout(fn, ms));
    this._clearTimeout = options.clearTimeout ?? (h => clearTimeout(h));
  }

  /** Connection state changes. */
  get statusChanged(): ISignal<this, TStatus> {
    return this._statusChanged;
  }

  get status(): TStatus {
    return this._status;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Open the socket (no-op when disposed, open, waiting to retry or ended). */
  connect(): void {
    if (!this.canConnect()) {
      return;
    }
    this._open();
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
    this.setStatus({ state: 'closed', attempt: this._attempt } as TStatus);
    Signal.clearData(this);
  }

  /**
   * Open the next socket. Called for the first attempt and for every retry,
   * so the URL can carry what the subclass knows now (rate, resume point).
   * A throw counts as a failed attempt and is retried with backoff.
   */
  protected abstract openSocket(): SocketLike;

  /** Parse one frame; throw an Error whose message says what is wrong. */
  protected abstract parseMessage(text: string): TMessage;

  /** A frame that parsed. */
  protected abstract handleMessage(message: TMessage): void;

  /** After each successful open, once the status says 'open': re-send what the server forgot. */
  protected onOpen(): void {
    // Nothing to re-apply by default.
  }

  /**
   * Whether a close (its CloseEvent, or whatever the socket passed) should be
   * followed by a retry. When it says no the socket has ended for good:
   * connect() stays a no-op and onEnded() reports it.
   */
  protected shouldReconnect(event: any): boolean {
    return true;
  }

  /** The socket ended for good (shouldReconnect said no). */
  protected onEnded(): void {
    // Nothing to report by default.
  }

  /**
   * Frames that could not be parsed (the error's message). Subclasses expose
   * it under their public name and may emit the server's own errors on it.
   */
  protected get protocolErrorSignal(): Signal<this, string> {
    return this._protocolError;
  }

  /**
   * Whether connect() would open a socket now: not disposed, not ended, no
   * socket and no retry pending. For subclasses whose connect() takes
   * arguments that must only apply when it does.
   */
  protected canConnect(): boolean {
    return !(this._isDisposed || this._socket || this._timer !== null || this._ended);
  }

  /** Send a JSON message when open; false when not (the caller re-applies it in onOpen). */
  protected sendJson(data: unknown): boolean {
    const socket = this._socket;
    if (!socket || socket.readyState !== OPEN) {
      return false;
    }
    socket.send(JSON.stringify(data));
    return true;
  }

  protected setStatus(status: TStatus): void {
    this._status = status;
    this._statusChanged.emit(status);
  }

  private _open(): void {
    this.setStatus({
      state: this._attempt === 0 ? 'connecting' : 'reconnecting',
      attempt: this._attempt
    } as TStatus);
    let socket: SocketLike;
    try {
      socket = this.openSocket();
    } catch {
      this._scheduleReconnect();
      return;
    }
    this._socket = socket;
    socket.onopen = () => {
      this._attempt = 0;
      this.setStatus({ state: 'open', attempt: 0 } as TStatus);
      this.onOpen();
    };
    socket.onmessage = event => this._onFrame(String(event.data));
    socket.onerror = () => {
      // A close event always follows; reconnection is decided there.
    };
    socket.onclose = event => {
      socket.onopen = socket.onclose = socket.onerror = socket.onmessage = null;
      if (this._socket === socket) {
        this._socket = null;
      }
      if (!this.shouldReconnect(event)) {
        this._ended = true;
        this.onEnded();
        return;
      }
      this._scheduleReconnect();
    };
  }

  private _onFrame(text: string): void {
    let message: TMessage;
    try {
      message = this.parseMessage(text);
    } catch (error) {
      // A bad frame is reported, not thrown: the socket stays up.
      this._protocolError.emit(error instanceof Error ? error.message : String(error));
      return;
    }
    this.handleMessage(message);
  }

  private _scheduleReconnect(): void {
    if (this._isDisposed) {
      return;
    }
    const delay = reconnectDelay(this._attempt, this._backoff);
    this._attempt++;
    this.setStatus({ state: 'reconnecting', attempt: this._attempt, retryInMs: delay } as TStatus);
    this._timer = this._setTimeout(() => {
      this._timer = null;
      if (!this._isDisposed) {
        this._open();
      }
    }, delay);
  }

  private _socket: SocketLike | null = null;
  private _attempt = 0;
  private _timer: any = null;
  private _ended = false;
  private _backoff: BackoffOptions;
  private _setTimeout: (fn: () => void, ms: number) => any;
  private _clearTimeout: (handle: any) => void;
  private _isDisposed = false;
  private _status = { state: 'connecting', attempt: 0 } as TStatus;
  private _statusChanged = new Signal<this, TStatus>(this);
  private _protocolError = new Signal<this, string>(this);
}
