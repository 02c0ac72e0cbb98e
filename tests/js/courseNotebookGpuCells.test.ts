import { gpuCellLabel } from '../../extension/src/course/notebookGpuCells';

describe("a notebook cell's GPU tag", () => {
  it('says "Needs a GPU" for a cell tagged needs-gpu, with the count from needs-N-gpus', () => {
    expect(gpuCellLabel(['needs-gpu'])).toBe('Needs a GPU');
    expect(gpuCellLabel(['needs-gpu', 'needs-2-gpus'])).toBe('Needs 2 GPUs');
    expect(gpuCellLabel(['needs-8-gpus', 'needs-gpu', 'other'])).toBe('Needs 8 GPUs');
  });

  it('says nothing for a cell without the tag, or tags that are not a list', () => {
    expect(gpuCellLabel(undefined)).toBeNull();
    expect(gpuCellLabel([])).toBeNull();
    expect(gpuCellLabel(['needs-2-gpus'])).toBeNull(); // the count alone is not the tag
    expect(gpuCellLabel('needs-gpu')).toBeNull();
    expect(gpuCellLabel(['gpudojo-expected-output'])).toBeNull();
  });
});
