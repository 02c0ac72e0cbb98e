import { expectedOutputLabel } from '../../extension/src/course/expectedOutput';

describe('expectedOutputLabel', () => {
  it('says a written output was composed from its source and that no GPU ran it', () => {
    expect(
      expectedOutputLabel({
        expected_kind: 'written',
        expected_on: 'NVIDIA H100 80GB HBM3',
        expected_source: 'H100 datasheet'
      })
    ).toBe('Expected output for NVIDIA H100 80GB HBM3, written from H100 datasheet: no GPU ran this');
  });

  it('names the GPU a captured output was printed on', () => {
    expect(expectedOutputLabel({ expected_kind: 'captured', expected_on: 'NVIDIA H200', expected_source: null })).toBe(
      'Output captured on NVIDIA H200'
    );
  });

  it('never claims a GPU ran a cell whose kind is not known', () => {
    const label = expectedOutputLabel({ expected_kind: null, expected_on: 'NVIDIA A100', expected_source: null });
    expect(label).toBe('Expected output on NVIDIA A100: this cell needs a GPU and was not run here');
    expect(label).not.toMatch(/captured/);
  });
});
