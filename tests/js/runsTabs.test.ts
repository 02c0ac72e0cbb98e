import { readTabLabel } from '../../extension/src/runs/commands';
import { runTabLabel } from '../../extension/src/runs/format';

describe('run tabs have labels a person can tell apart, after a reload too', () => {
  const at1402 = new Date(2026, 11, 5, 14, 2, 30).getTime() / 1000;

  it('names a lab run by its number, title and the time it started', () => {
    expect(runTabLabel({ lab: 'lab-03-ddp', title: 'DDP', created_at: at1402 })).toBe('lab-03 DDP · 14:02');
    expect(runTabLabel({ lab: null, title: 'train.py', created_at: at1402 })).toBe('train.py · 14:02');
    expect(runTabLabel({ lab: 'lab-03-ddp', title: 'lab-03 DDP', created_at: at1402 })).toBe('lab-03 DDP · 14:02');
  });

  it('takes back the label a restored tab carried, bounded', () => {
    expect(readTabLabel({ id: 'r1', label: 'lab-03 DDP · 14:02' })).toBe('lab-03 DDP · 14:02');
    expect(readTabLabel({ id: 'r1' })).toBeNull();
    expect(readTabLabel({ label: 'x'.repeat(500) })).toBeNull();
  });
});
