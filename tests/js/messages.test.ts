import { errorFromResponse } from '../../extension/src/api/errors';
import { TelemetryProtocolError, parseTelemetryMessage } from '../../extension/src/api/messages';
import { TelemetryModel } from '../../extension/src/gpu/model';
import { sample, sampleFrame } from './fixtures';

describe('parseTelemetryMessage', () => {
  it('reads a history then samples, in the order the server sends them', () => {
    const frames = [
      JSON.stringify({ type: 'history', rate_hz: 4, max_hz: 20, mode: 'gpu', samples: [sample(1), sample(2)] }),
      sampleFrame(3),
      sampleFrame(4)
    ];
    const model = new TelemetryModel();
    const messages = frames.map(parseTelemetryMessage);
    messages.forEach(m => model.handleMessage(m));
    expect(messages.map(m => m.type)).toEqual(['history', 'sample', 'sample']);
    expect(model.samples.map(s => s.t)).toEqual([1, 2, 3, 4]);
    expect(model.mode).toBe('gpu');
  });

  it('fills in missing unsupported and processes lists of GPU samples', () => {
    const message = parseTelemetryMessage(
      JSON.stringify({ type: 'sample', t: 1, host: sample(1).host, gpus: [{ index: 0, power_w: 5 }] })
    );
    expect(message.type).toBe('sample');
    if (message.type === 'sample') {
      expect(message.gpus[0].unsupported).toEqual([]);
      expect(message.gpus[0].processes).toEqual([]);
    }
  });

  it('reads state messages', () => {
    expect(parseTelemetryMessage('{"type":"state","paused":true,"rate_hz":2}')).toEqual({
      type: 'state',
      paused: true,
      rate_hz: 2
    });
  });

  it('reads error messages and keeps the server\'s message', () => {
    const message = parseTelemetryMessage(
      JSON.stringify({ type: 'error', error: { code: 'bad_control', message: 'unknown control type' } })
    );
    expect(message).toEqual({
      type: 'error',
      error: { code: 'bad_control', message: 'unknown control type', detail: undefined }
    });
  });

  it.each([
    ['not json', 'not JSON'],
    ['[1,2]', 'no type'],
    ['{"type":"bogus"}', "unknown telemetry message type 'bogus'"],
    ['{"type":"sample","host":{}}', 'a sample needs t and host'],
    ['{"type":"history","samples":[]}', 'rate_hz and max_hz'],
    ['{"type":"state","paused":"yes","rate_hz":1}', 'paused and rate_hz']
  ])('rejects %s', (frame, text) => {
    expect(() => parseTelemetryMessage(frame)).toThrow(TelemetryProtocolError);
    expect(() => parseTelemetryMessage(frame)).toThrow(text);
  });
});

describe('errorFromResponse', () => {
  it('carries the server\'s message, code and detail', () => {
    const body = JSON.stringify({
      error: { code: 'nvml_unavailable', message: 'No NVIDIA driver found', detail: { hint: 'install' } }
    });
    const error = errorFromResponse(503, 'Service Unavailable', body);
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe('No NVIDIA driver found');
    expect(error.code).toBe('nvml_unavailable');
    expect(error.status).toBe(503);
    expect(error.detail).toEqual({ hint: 'install' });
  });

  it('explains a body that is not the API\'s error shape', () => {
    const error = errorFromResponse(404, 'Not Found', '<html>nope</html>');
    expect(error.message).toContain('404');
    expect(error.message).toContain('gpudojo server extension');
    expect(error.code).toBe('http_error');
  });
});
