import { vi } from 'vitest';

export interface RecordedCall {
  method: string;
  path: string;
  /** The query parameters, for routes that take them. */
  query: URLSearchParams;
  headers: Record<string, string>;
  body: unknown;
}

export interface FakeReply {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A multipart body as its fields in order (a file part as its file name). */
export interface FormFields {
  order: string[];
  fields: Record<string, string>;
}

function formFields(form: FormData): FormFields {
  const order: string[] = [];
  const fields: Record<string, string> = {};
  form.forEach((v, k) => {
    order.push(k);
    fields[k] = typeof v === 'string' ? v : `file:${v.name}`;
  });
  return { order, fields };
}

type Handler = (call: RecordedCall) => FakeReply | Promise<FakeReply>;

/**
 * Replaces global fetch with a tiny routing table keyed by "METHOD /path"
 * (query strings ignored). Unknown routes answer 404 like the Engine. Each
 * call is recorded so tests can check bodies and headers.
 */
export function fakeEngine(routes: Record<string, Handler | FakeReply | FakeReply[]>) {
  const calls: RecordedCall[] = [];
  const queues = new Map<string, FakeReply[]>();
  for (const [k, v] of Object.entries(routes)) if (Array.isArray(v)) queues.set(k, [...v]);

  const fetchMock = vi.fn(async (input: RequestInfo | URL, init: RequestInit = {}) => {
    const url = new URL(String(input), 'http://console.test');
    const method = (init.method ?? 'GET').toUpperCase();
    const call: RecordedCall = {
      method,
      path: url.pathname,
      query: url.searchParams,
      headers: { ...((init.headers as Record<string, string>) ?? {}) },
      body: typeof init.body === 'string' ? JSON.parse(init.body) : init.body instanceof FormData ? formFields(init.body) : undefined,
    };
    calls.push(call);
    const key = `${method} ${url.pathname}`;
    let reply: FakeReply;
    const route = routes[key];
    if (queues.has(key)) {
      const q = queues.get(key)!;
      reply = q.length > 1 ? q.shift()! : q[0];
    } else if (typeof route === 'function') {
      reply = await route(call);
    } else if (route) {
      reply = route as FakeReply;
    } else {
      reply = { status: 404, body: { error: 'not_found', message: `no fake for ${key}` } };
    }
    const status = reply.status ?? 200;
    return new Response(status === 204 || reply.body === undefined ? null : JSON.stringify(reply.body), {
      status,
      headers: { 'Content-Type': 'application/json', ...(reply.headers ?? {}) },
    });
  });
  vi.stubGlobal('fetch', fetchMock);
  return {
    calls,
    fetchMock,
    callsTo: (method: string, path: string) => calls.filter((c) => c.method === method && c.path === path),
  };
}

export const ADMIN = {
  username: 'admin',
  role: 'admin',
  auth_source: 'local',
  mfa_enabled: true,
  mfa_configured: true,
  passkey_count: 0,
  recovery_required: false,
  created_at: '2026-11-21T08:00:00Z',
};

export const MFA = {
  secret: 'JBSWY3DPEHPK3PXP',
  otpauth_url: 'otpauth://totp/Cairn:admin?secret=JBSWY3DPEHPK3PXP&issuer=Cairn',
};

export function validationFailed(fields: Record<string, string>, status = 400, error = 'validation_failed'): FakeReply {
  return { status, body: { error, message: 'request is invalid', fields } };
}
