import {
  NOT_SUPPORTED,
  NO_VALUE,
  formatBytes,
  formatField,
  formatNumber,
  formatPercent,
  formatRate,
  formatWindow,
  modeLabel
} from '../../extension/src/gpu/format';
import { gpuSample } from './fixtures';

describe('formatBytes', () => {
  it.each([
    [0, '0 B'],
    [512, '512 B'],
    [1536, '1.5 KiB'],
    [80 * 1024 ** 3, '80.0 GiB'],
    [141 * 1024 ** 3, '141 GiB'],
    [2.5 * 1024 ** 4, '2.5 TiB']
  ])('%d bytes read as %s', (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });

  it('shows a dash for a missing value', () => {
    expect(formatBytes(null)).toBe(NO_VALUE);
    expect(formatBytes(undefined)).toBe(NO_VALUE);
    expect(formatBytes(NaN)).toBe(NO_VALUE);
  });
});

describe('number formatting', () => {
  it('adds units and decimals', () => {
    expect(formatNumber(71.46, 'W')).toBe('71 W');
    expect(formatNumber(71.46, 'W', 1)).toBe('71.5 W');
    expect(formatNumber(null, 'W')).toBe(NO_VALUE);
    expect(formatPercent(42.4)).toBe('42 %');
    expect(formatPercent(undefined)).toBe(NO_VALUE);
    expect(formatRate(4)).toBe('4 Hz');
    expect(formatRate(0.5)).toBe('0.5 Hz');
    expect(formatWindow(30)).toBe('30 s');
    expect(formatWindow(120)).toBe('2 min');
  });

  it('says "not supported" for a field NVML refused, never 0', () => {
    const refused = gpuSample(0, { power_w: null, unsupported: ['power_w'] });
    expect(formatField(refused, 'power_w', v => formatNumber(v, 'W'))).toBe(NOT_SUPPORTED);
    const absent = gpuSample(0, { power_w: null });
    expect(formatField(absent, 'power_w', v => formatNumber(v, 'W'))).toBe(NO_VALUE);
    const present = gpuSample(0, { power_w: 0 });
    expect(formatField(present, 'power_w', v => formatNumber(v, 'W'))).toBe('0 W');
  });

  it('names every mode in the user\'s words', () => {
    expect(modeLabel('gpu')).toBe('GPU (live NVML)');
    expect(modeLabel('replay')).toBe('Replay of a recorded NVML session');
    expect(modeLabel('cpu')).toBe('No GPU: host metrics only');
  });
});
