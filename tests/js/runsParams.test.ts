import {
  SWEEP_FIELD,
  buildLabRequest,
  checkParam,
  errorsFromDetail,
  initialValues,
  paramSummary,
  parseField,
  parseSweepValues
} from '../../extension/src/runs/params';
import { DDP_LAB } from './runsFixtures';

const spec = (name: string) => DDP_LAB.parameters.find(p => p.name === name)!;

describe('run form validation', () => {
  it('starts from the defaults, or from given values that fit', () => {
    const raw = initialValues(DDP_LAB, { nproc: 4, epochs: 999, part: 'vector-add', block: 'x' });
    expect(raw).toEqual({ nproc: '4', epochs: '3', lr: '0.05', use_sampler: true, block: '2', part: '0' });
  });

  it('builds the request with typed values: numbers, booleans and the choice itself', () => {
    const raw = { ...initialValues(DDP_LAB), nproc: '2', epochs: ' 1 ', use_sampler: false, block: '0' };
    const outcome = buildLabRequest(DDP_LAB, raw, null);
    expect(outcome.errors).toEqual({});
    expect(outcome.request).toEqual({
      kind: 'lab',
      lab: 'lab-03-ddp',
      params: { nproc: 2, epochs: 1, lr: 0.05, use_sampler: false, block: 64, part: 'all' }
    });
  });

  it('refuses what the server refuses, naming the field', () => {
    expect(parseField(spec('nproc'), '9')).toEqual({ ok: false, error: '9 is above the maximum, 8' });
    expect(parseField(spec('nproc'), '0')).toEqual({ ok: false, error: '0 is below the minimum, 1' });
    expect(parseField(spec('nproc'), '1.5')).toEqual({ ok: false, error: 'expected a whole number, got 1.5' });
    expect(parseField(spec('nproc'), '')).toEqual({ ok: false, error: 'enter a number' });
    expect(parseField(spec('lr'), 'fast')).toEqual({ ok: false, error: "expected a number, got 'fast'" });
    expect(checkParam(spec('use_sampler'), 1)).toEqual({ ok: false, error: 'expected true or false, got 1' });
    expect(checkParam(spec('block'), 100).ok).toBe(false);
    const outcome = buildLabRequest(DDP_LAB, { ...initialValues(DDP_LAB), nproc: '9', lr: '2' }, null);
    expect(outcome.request).toBeNull();
    expect(Object.keys(outcome.errors).sort()).toEqual(['lr', 'nproc']);
  });

  it('keeps true apart from 1 in choices, as the server does', () => {
    const flags = { name: 'flag', type: 'choice' as const, default: 1, help: '', min: null, max: null, choices: [1, 'auto'] };
    expect(checkParam(flags, true).ok).toBe(false);
    expect(checkParam(flags, 1)).toEqual({ ok: true, value: 1 });
  });

  it('sweeps one parameter over typed values, leaving its own field out', () => {
    const raw = { ...initialValues(DDP_LAB), nproc: 'not used', epochs: '1' };
    const outcome = buildLabRequest(DDP_LAB, raw, { enabled: true, param: 'nproc', text: '1, 2 4' });
    expect(outcome.errors).toEqual({});
    expect(outcome.request?.sweep).toEqual({ param: 'nproc', values: [1, 2, 4] });
    expect(outcome.request?.params?.nproc).toBeUndefined();
    expect(parseSweepValues(spec('part'), 'all;vector-add')).toEqual({ ok: true, values: ['all', 'vector-add'] });
    expect(parseSweepValues(spec('use_sampler'), 'yes no')).toEqual({ ok: true, values: [true, false] });
  });

  it('says what is wrong with a sweep at the sweep field', () => {
    const bad = (text: string) =>
      buildLabRequest(DDP_LAB, initialValues(DDP_LAB), { enabled: true, param: 'nproc', text }).errors[SWEEP_FIELD];
    expect(bad('')).toMatch(/enter the values of nproc/);
    expect(bad('1, 16')).toBe('16: 16 is above the maximum, 8');
    expect(bad('1 2 3 4 5 6 7 8 1')).toMatch(/at most 8 values/);
    expect(bad('two')).toMatch(/'two' is not a number/);
  });

  it('places the server’s 400 details next to their fields', () => {
    const detail = [
      { param: 'nproc', message: '9 is above the maximum, 8' },
      { param: 'bogus', message: "lab-03-ddp has no parameter 'bogus'" }
    ];
    expect(errorsFromDetail(detail, 'nproc')).toEqual({
      nproc: '9 is above the maximum, 8',
      [SWEEP_FIELD]: '9 is above the maximum, 8',
      bogus: "lab-03-ddp has no parameter 'bogus'"
    });
    const schema = [
      { loc: ['lab', 'sweep', 'values'], msg: 'List should have at most 8 items' },
      { loc: ['lab', 'params', 'epochs'], msg: 'Input should be a valid number' }
    ];
    expect(errorsFromDetail(schema)).toEqual({
      [SWEEP_FIELD]: 'List should have at most 8 items',
      epochs: 'Input should be a valid number'
    });
    expect(errorsFromDetail('not a list')).toEqual({});
  });

  it('summarises the parameters that differ from the lab’s defaults (nproc always)', () => {
    expect(paramSummary({ nproc: 2, epochs: 1, lr: 0.05 }, DDP_LAB)).toBe('nproc=2 epochs=1');
    expect(paramSummary({ a: 1, b: true })).toBe('a=1 b=true');
  });
});
