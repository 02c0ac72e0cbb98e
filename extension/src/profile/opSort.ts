/**
 * How the top-operator table is sorted: by which column, which way, and what
 * the CPU / device toggle means (the same column, on the other clock).
 */

import type { OpRow } from '../api/types';

export type OpSortKey = 'name' | 'calls' | 'self_us' | 'total_us' | 'device_self_us' | 'device_total_us';

export interface OpSort {
  key: OpSortKey;
  descending: boolean;
}

/** The table opens sorted by self CPU time, largest first (as the server lists it). */
export const DEFAULT_OP_SORT: OpSort = { key: 'self_us', descending: true };

/** Which clock the table's times are sorted on. */
export type TimeBasis = 'cpu' | 'device';

const DEVICE_OF: Partial<Record<OpSortKey, OpSortKey>> = { self_us: 'device_self_us', total_us: 'device_total_us' };
const CPU_OF: Partial<Record<OpSortKey, OpSortKey>> = { device_self_us: 'self_us', device_total_us: 'total_us' };

/** `rows` sorted by `sort`; ties keep the name order so the table does not shuffle. */
export function sortOps(rows: readonly OpRow[], sort: OpSort): OpRow[] {
  const sign = sort.descending ? -1 : 1;
  const byName = (a: OpRow, b: OpRow) => a.name.localeCompare(b.name);
  if (sort.key === 'name') {
    return [...rows].sort((a, b) => sign * byName(a, b));
  }
  const key = sort.key;
  return [...rows].sort((a, b) => sign * ((a[key] ?? 0) - (b[key] ?? 0)) || byName(a, b));
}

/** A click on column `key`: the same column turns around; another starts largest first (names A-Z). */
export function nextSort(current: OpSort, key: OpSortKey): OpSort {
  if (current.key === key) {
    return { key, descending: !current.descending };
  }
  return { key, descending: key !== 'name' };
}

/** The clock a sort is on (calls and names count as CPU). */
export function basisOf(sort: OpSort): TimeBasis {
  return sort.key === 'device_self_us' || sort.key === 'device_total_us' ? 'device' : 'cpu';
}

/** The CPU / device toggle: the same column (self or total) on the other clock, largest first. */
export function withBasis(current: OpSort, basis: TimeBasis): OpSort {
  const map = basis === 'device' ? DEVICE_OF : CPU_OF;
  const mapped = map[current.key];
  if (mapped) {
    return { key: mapped, descending: true };
  }
  if (basisOf(current) === basis) {
    return current;
  }
  return { key: basis === 'device' ? 'device_self_us' : 'self_us', descending: true };
}
