/**
 * Live progress: the server emits a gpudojo progress event on Jupyter Server's event bus for
 * every progress write (a lesson marked, a quiz graded, a lab run or an exercise check that
 * ended: server/gpudojo/course/events.py); the course model reloads when one arrives, so every
 * view of the course follows at once.
 */

import type { ReadonlyJSONObject } from '@lumino/coreutils';
import type { IDisposable } from '@lumino/disposable';
import type { IStream } from '@lumino/signaling';
import type { CourseKind } from '../api/types';

/** The event's schema id (PROGRESS_EVENT_SCHEMA_ID in course/events.py). */
export const PROGRESS_EVENT_SCHEMA_ID = 'https://gpudojo.dev/events/course/progress/v1';

/** An event of the server's bus as JupyterLab's event manager streams it. */
export type EventEmission = ReadonlyJSONObject & { schema_id: string };

/** What the model offers to follow progress made elsewhere (CourseModel satisfies it). */
export interface ProgressTarget {
  noteProgress(kind: CourseKind, id: string): Promise<void>;
  refresh(): Promise<void>;
}

const KINDS: ReadonlySet<string> = new Set(['lesson', 'lab', 'exercise']);

/** Reload `model` on every gpudojo progress event of `stream`; dispose the result to stop. */
export function followProgressEvents(stream: IStream<unknown, EventEmission>, model: ProgressTarget): IDisposable {
  const onEvent = (_: unknown, event: EventEmission) => {
    if (event.schema_id !== PROGRESS_EVENT_SCHEMA_ID) {
      return;
    }
    const kind = String(event['kind'] ?? '');
    const id = String(event['id'] ?? '');
    // noteProgress tells the views which item changed, then reloads; the module test reloads only.
    void (KINDS.has(kind) && id ? model.noteProgress(kind as CourseKind, id) : model.refresh());
  };
  stream.connect(onEvent);
  let disposed = false;
  return {
    get isDisposed() {
      return disposed;
    },
    dispose() {
      if (!disposed) {
        disposed = true;
        stream.disconnect(onEvent);
      }
    }
  };
}
