// The one place the console talks HTTP. Every error body is
// {"error": code, "message", "fields"?} (docs/api.md); ApiError carries it.

export const CSRF_COOKIE = 'cairn_csrf';
export const CSRF_HEADER = 'X-CSRF-Token';
/** On HTTPS origins the Engine binds its cookies to the origin with this prefix. */
export const HOST_COOKIE_PREFIX = '__Host-';

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly fields: Record<string, string>;
  /** Seconds from the Retry-After header of a 429, when present. */
  readonly retryAfter: number | null;
  readonly requestId: string | null;

  constructor(opts: {
    status: number;
    code: string;
    message: string;
    fields?: Record<string, string> | null;
    retryAfter?: number | null;
    requestId?: string | null;
  }) {
    super(opts.message);
    this.name = 'ApiError';
    this.status = opts.status;
    this.code = opts.code;
    this.fields = opts.fields ?? {};
    this.retryAfter = opts.retryAfter ?? null;
    this.requestId = opts.requestId ?? null;
  }
}

export function readCookie(name: string, cookieString: string = document.cookie): string | null {
  for (const part of cookieString.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) {
      const raw = part.slice(eq + 1).trim();
      try {
        return decodeURIComponent(raw);
      } catch {
        return raw;
      }
    }
  }
  return null;
}

/** The CSRF token to echo: the __Host- cookie on HTTPS origins, the plain one on a local HTTP Engine. */
export function csrfToken(cookieString: string = document.cookie): string | null {
  return readCookie(HOST_COOKIE_PREFIX + CSRF_COOKIE, cookieString) ?? readCookie(CSRF_COOKIE, cookieString);
}

/** Parses Retry-After: delta seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

// Routes whose 401 answers are part of a sign-in form (wrong password, wrong
// code, ...) rather than an ended session.
const AUTH_FLOW_PREFIXES = ['/api/bootstrap/', '/api/auth/login', '/api/auth/mfa/verify'];

export function isAuthFlowPath(path: string): boolean {
  return AUTH_FLOW_PREFIXES.some((p) => path.startsWith(p));
}

type SessionListener = (reason: 'unauthorized' | 'locked') => void;
const listeners = new Set<SessionListener>();

/** Subscribes to "the session ended" (401 on a Token route) and "the cipher is locked" (423). */
export function onSessionProblem(listener: SessionListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function emit(reason: 'unauthorized' | 'locked') {
  for (const l of [...listeners]) l(reason);
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export interface RequestOptions {
  method?: string;
  body?: unknown;
  signal?: AbortSignal;
  /** Set on the one repeat of a read whose operation was followed. */
  followed?: boolean;
}

/**
 * The status of an operation that outlived its request: the Engine answered
 * 202 with its URL in Location (docs/api.md "Operations").
 */
export interface OperationStatus {
  operation_id: string;
  status: 'running' | 'completed' | 'failed' | string;
  phase?: string;
  error?: string;
  summary: string;
  url: string;
}

const OPERATION_PATH = '/api/operations/';

/** How often a followed operation is asked again: from firstMs, doubling up to maxMs. */
export const operationPolling = { firstMs: 500, maxMs: 3000 };

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new DOMException('Aborted', 'AbortError'));
      return;
    }
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(new DOMException('Aborted', 'AbortError'));
      },
      { once: true },
    );
  });
}

/** Asks an operation's URL until it is no longer running. */
export async function followOperation(url: string, signal?: AbortSignal): Promise<OperationStatus> {
  let delay = operationPolling.firstMs;
  for (;;) {
    await pause(delay, signal);
    const op = await api<OperationStatus>(url, { signal });
    if (op.status !== 'running') return op;
    delay = Math.min(delay * 2, operationPolling.maxMs);
  }
}

/**
 * An operation's outcome as the caller of the route that started it sees it:
 * a failure throws the operation's code and message; a read is asked again
 * (once) for what the operation stored; an action answers nothing more (its
 * callers read `result?.field`).
 */
async function operationOutcome<T>(location: string, path: string, method: string, opts: RequestOptions): Promise<T> {
  if (opts.followed) {
    // The repeat of a read started another slow operation: stop here.
    throw new ApiError({
      status: 202,
      code: 'operation_pending',
      message: 'The device is still working on it; its outcome will be in the device activity.',
    });
  }
  const op = await followOperation(location, opts.signal);
  if (op.status === 'failed') {
    throw new ApiError({ status: 0, code: op.error || 'internal', message: op.summary });
  }
  if (method !== 'GET') return undefined as T;
  return api<T>(path, { ...opts, followed: true });
}

export async function api<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const method = (opts.method ?? (opts.body === undefined ? 'GET' : 'POST')).toUpperCase();
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  if (UNSAFE.has(method)) {
    const csrf = csrfToken();
    if (csrf) headers[CSRF_HEADER] = csrf;
  }

  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: opts.signal,
    });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError({
      status: 0,
      code: 'network_error',
      message: 'The Engine cannot be reached. Check that it is running and try again.',
    });
  }

  if (res.ok) {
    if (res.status === 204) return undefined as T;
    const location = res.headers.get('Location');
    if (res.status === 202 && location?.startsWith(OPERATION_PATH)) {
      return operationOutcome<T>(location, path, method, opts);
    }
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  const error = await toApiError(res);
  if (!isAuthFlowPath(path)) {
    if (error.status === 401 && error.code === 'unauthorized') emit('unauthorized');
    else if (error.status === 423) emit('locked');
  }
  throw error;
}

async function toApiError(res: Response): Promise<ApiError> {
  let body: { error?: unknown; message?: unknown; fields?: unknown } = {};
  try {
    body = (await res.json()) ?? {};
  } catch {
    // Not JSON (a proxy page, for example): fall back to the status line.
  }
  const fields =
    body.fields && typeof body.fields === 'object' ? (body.fields as Record<string, string>) : null;
  return new ApiError({
    status: res.status,
    code: typeof body.error === 'string' ? body.error : statusCode(res.status),
    message:
      typeof body.message === 'string' && body.message
        ? body.message
        : `The Engine answered ${res.status} ${res.statusText}`.trim(),
    fields,
    retryAfter: parseRetryAfter(res.headers.get('Retry-After')),
    requestId: res.headers.get('X-Request-Id'),
  });
}

function statusCode(status: number): string {
  switch (status) {
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 423:
      return 'aegis_locked';
    case 429:
      return 'rate_limited';
    case 503:
      return 'unavailable';
    default:
      return status >= 500 ? 'internal' : 'http_error';
  }
}

/**
 * POST a multipart form (a file upload) with the session's CSRF token;
 * errors as api() answers them.
 */
export async function apiForm<T>(path: string, form: FormData): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  const csrf = csrfToken();
  if (csrf) headers[CSRF_HEADER] = csrf;
  let res: Response;
  try {
    res = await fetch(path, { method: 'POST', headers, credentials: 'same-origin', body: form });
  } catch {
    throw new ApiError({
      status: 0,
      code: 'network_error',
      message: 'The Engine cannot be reached. Check that it is running and try again.',
    });
  }
  if (res.ok) return (await res.json()) as T;
  throw await toApiError(res);
}
