/**
 * TelemetryStream: a telemetry websocket that reconnects with exponential
 * backoff, parses frames and re-applies the subscriber's pause and rate after
 * every reconnect. The socket lifecycle is ReconnectingSocket's; this class
 * adds the telemetry protocol (rate in the URL, pause/resume/rate control
 * messages). It takes a socket factory, so it runs without JupyterLab
 * (client.ts builds the real URL and WebSocket).
 */

import { ISignal, Signal } from '@lumino/signaling';
import { parseTelemetryMessage } from './messages';
import { ReconnectingSocket, ReconnectingSocketOptions, SocketLike } from './reconnectingSocket';
import type { TelemetryControl, TelemetryMessage } from './types';

// Defined with the base class; re-exported here, where callers have always imported them from.
export type { ConnectionState, ConnectionStatus, SocketLike } from './reconnectingSocket';

export interface TelemetryStreamOptions extends ReconnectingSocketOptions {
  /** Open a socket asking for `hz` samples per second. */
  createSocket: (hz: number) => SocketLike;
  /** Requested rate (Hz); the server clamps it. */
  rateHz?: number;
}

export class TelemetryStream extends ReconnectingSocket<TelemetryMessage> {
  constructor(options: TelemetryStreamOptions) {
    super(options);
    this._createSocket = options.createSocket;
    this._rateHz = options.rateHz ?? 4;
  }

  /** Every parsed message from the server, in order. */
  get messageReceived(): ISignal<this, TelemetryMessage> {
    return this._messageReceived;
  }

  /** Frames that could not be parsed (the error's message). */
  get protocolError(): ISignal<this, string> {
    return this.protocolErrorSignal;
  }

  /** Whether the subscriber asked the server to pause. */
  get paused(): boolean {
    return this._paused;
  }

  /** The rate this subscriber asks for (Hz). */
  get rateHz(): number {
    return this._rateHz;
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

  /** The current rate goes in the URL, so a reconnect asks for the latest one. */
  protected openSocket(): SocketLike {
    return this._createSocket(this._rateHz);
  }

  protected parseMessage(text: string): TelemetryMessage {
    return parseTelemetryMessage(text);
  }

  protected handleMessage(message: TelemetryMessage): void {
    this._messageReceived.emit(message);
  }

  /** A new server-side subscriber starts unpaused: re-apply a pause asked for before the drop. */
  protected onOpen(): void {
    if (this._paused) {
      this._send({ type: 'pause' });
    }
  }

  private _send(control: TelemetryControl): boolean {
    // When not open, false: pause is re-applied in onOpen, the rate via the URL.
    return this.sendJson(control);
  }

  private _createSocket: (hz: number) => SocketLike;
  private _rateHz: number;
  private _paused = false;
  private _messageReceived = new Signal<this, TelemetryMessage>(this);
}
