/**
 * The hover's event details, fetched once per span and kept for the last few
 * hundred: moving the cursor back over a span shows its shapes and stack at
 * once, and a span hovered twice while its answer is on the way asks once.
 */

import type { EventDetail } from '../api/types';

/** Details kept (each is a few hundred bytes of text). */
export const EVENT_CACHE_SIZE = 256;

export class EventCache {
  constructor(
    private readonly _fetch: (ref: number) => Promise<EventDetail>,
    private readonly _limit = EVENT_CACHE_SIZE
  ) {}

  /** The detail of event `ref` (fetched on the first ask; a failure is forgotten so a later hover asks again). */
  get(ref: number): Promise<EventDetail> {
    const known = this._entries.get(ref);
    if (known) {
      // Most recently used last: Map keeps insertion order, so the oldest is first.
      this._entries.delete(ref);
      this._entries.set(ref, known);
      return known;
    }
    const pending = this._fetch(ref);
    this._entries.set(ref, pending);
    pending.catch(() => {
      if (this._entries.get(ref) === pending) {
        this._entries.delete(ref);
      }
    });
    while (this._entries.size > this._limit) {
      const oldest = this._entries.keys().next().value as number;
      this._entries.delete(oldest);
    }
    return pending;
  }

  /** Whether event `ref`'s detail was asked for and is still kept. */
  has(ref: number): boolean {
    return this._entries.has(ref);
  }

  private _entries = new Map<number, Promise<EventDetail>>();
}
