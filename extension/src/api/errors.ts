/** Errors from the gpudojo API, carrying what the server said and what to do next. */

import type { ApiErrorBody } from './types';

/** An error the server reported as `{error: {code, message, detail}}` (or a transport failure). */
export class GpudojoApiError extends Error {
  readonly code: string;
  readonly status: number;
  readonly detail: unknown;

  constructor(message: string, code: string, status: number, detail?: unknown) {
    super(message);
    this.name = 'GpudojoApiError';
    this.code = code;
    this.status = status;
    this.detail = detail;
  }
}

function isErrorBody(value: unknown): value is ApiErrorBody {
  if (!value || typeof value !== 'object') {
    return false;
  }
  const error = (value as { error?: unknown }).error;
  return (
    !!error &&
    typeof error === 'object' &&
    typeof (error as { message?: unknown }).message === 'string'
  );
}

/**
 * Turn a failed response (HTTP `status`, raw body text) into a GpudojoApiError.
 *
 * Falls back to a generic message when the body is not the API's error shape
 * (a proxy's HTML page, an empty body).
 */
export function errorFromResponse(
  status: number,
  statusText: string,
  bodyText: string
): GpudojoApiError {
  let parsed: unknown = undefined;
  try {
    parsed = bodyText ? JSON.parse(bodyText) : undefined;
  } catch {
    parsed = undefined;
  }
  if (isErrorBody(parsed)) {
    const { code, message, detail } = parsed.error;
    return new GpudojoApiError(message, code || 'error', status, detail);
  }
  const reason = statusText || 'request failed';
  return new GpudojoApiError(
    `The gpudojo server answered ${status} (${reason}). Is the gpudojo server extension enabled?`,
    'http_error',
    status,
    bodyText ? bodyText.slice(0, 500) : undefined
  );
}
