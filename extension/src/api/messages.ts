/** Parsing of what the telemetry socket receives: one validated message per frame. */

import type {
  RecordingInfo,
  TelemetryMessage,
  TelemetrySample,
  TelemetryMode
} from './types';

/** A frame that is not a telemetry message we understand. */
export class TelemetryProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TelemetryProtocolError';
  }
}

const MODES: ReadonlyArray<TelemetryMode> = ['gpu', 'replay', 'cpu'];

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

function isNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function checkSample(value: unknown, where: string): TelemetrySample {
  if (!isObject(value) || !isNumber(value.t) || !isObject(value.host)) {
    throw new TelemetryProtocolError(`${where}: a sample needs t and host`);
  }
  const gpus = Array.isArray(value.gpus) ? value.gpus : [];
  for (const gpu of gpus) {
    if (!isObject(gpu) || !isNumber(gpu.index)) {
      throw new TelemetryProtocolError(`${where}: every GPU sample needs an index`);
    }
    if (!Array.isArray(gpu.unsupported)) {
      gpu.unsupported = [];
    }
    if (!Array.isArray(gpu.processes)) {
      gpu.processes = [];
    }
  }
  return {
    type: 'sample',
    t: value.t,
    recording_t: isNumber(value.recording_t) ? value.recording_t : null,
    host: value.host as unknown as TelemetrySample['host'],
    gpus: gpus as TelemetrySample['gpus']
  };
}

/**
 * Parse one websocket frame (JSON text) into a TelemetryMessage.
 *
 * Throws TelemetryProtocolError when the frame is not JSON or not one of
 * history / sample / state / error.
 */
export function parseTelemetryMessage(data: string): TelemetryMessage {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw new TelemetryProtocolError('telemetry frame is not JSON');
  }
  if (!isObject(value) || typeof value.type !== 'string') {
    throw new TelemetryProtocolError('telemetry frame has no type');
  }
  switch (value.type) {
    case 'history': {
      if (!isNumber(value.rate_hz) || !isNumber(value.max_hz)) {
        throw new TelemetryProtocolError('history: rate_hz and max_hz are required');
      }
      const mode = MODES.includes(value.mode as TelemetryMode)
        ? (value.mode as TelemetryMode)
        : 'cpu';
      const samples = Array.isArray(value.samples) ? value.samples : [];
      return {
        type: 'history',
        rate_hz: value.rate_hz,
        max_hz: value.max_hz,
        mode,
        recording: isObject(value.recording) ? (value.recording as unknown as RecordingInfo) : null,
        samples: samples.map((s, i) => checkSample(s, `history sample ${i}`))
      };
    }
    case 'sample':
      return checkSample(value, 'sample');
    case 'state':
      if (typeof value.paused !== 'boolean' || !isNumber(value.rate_hz)) {
        throw new TelemetryProtocolError('state: paused and rate_hz are required');
      }
      return { type: 'state', paused: value.paused, rate_hz: value.rate_hz };
    case 'error': {
      const error = isObject(value.error) ? value.error : {};
      return {
        type: 'error',
        error: {
          code: typeof error.code === 'string' ? error.code : 'error',
          message:
            typeof error.message === 'string'
              ? error.message
              : 'The telemetry server reported an error',
          detail: error.detail
        }
      };
    }
    default:
      throw new TelemetryProtocolError(`unknown telemetry message type '${value.type}'`);
  }
}
