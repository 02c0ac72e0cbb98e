/** Reconnect schedule for server sockets: exponential, capped, reset after a good open. */

export interface BackoffOptions {
  /** Delay before the first retry (ms). */
  initialMs: number;
  /** Largest delay ever waited (ms). */
  maxMs: number;
  /** Growth per failed attempt. */
  factor: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = {
  initialMs: 500,
  maxMs: 10000,
  factor: 2
};

/**
 * Delay before reconnect attempt number `attempt` (0 = first retry), in ms.
 *
 * 0.5 s, 1 s, 2 s, 4 s, 8 s, then 10 s for ever with the defaults.
 */
export function reconnectDelay(
  attempt: number,
  options: BackoffOptions = DEFAULT_BACKOFF
): number {
  const n = Math.max(0, Math.floor(attempt));
  const delay = options.initialMs * Math.pow(options.factor, n);
  return Math.min(options.maxMs, delay);
}
