// The console's typed way to call the Engine: paths, path and query
// parameters, request bodies and answers all come from the API document the
// Engine generates from its route table (docs/openapi.json ->
// openapi.gen.ts, `make generate`). A page reading a field the Engine does
// not send, or sending one it does not take, fails `tsc -b`.
import { api } from './client';
import type { components, paths } from './openapi.gen';

export type Schemas = components['schemas'];
/** A named shape of the API document (a Go wire type: siteJSON -> 'Site'). */
export type Schema<N extends keyof Schemas> = Schemas[N];

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** The paths that have an operation for method. */
export type PathsWith<M extends Method> = {
  [P in keyof paths]: paths[P][M] extends { responses: unknown } ? P : never;
}[keyof paths];

type Operation<P extends keyof paths, M extends Method> = paths[P][M] extends infer O
  ? O extends { responses: unknown }
    ? O
    : never
  : never;

type JsonContent<R> = R extends { content: { 'application/json': infer B } } ? B : undefined;
type Success = 200 | 201 | 202 | 204;

/**
 * An operation's 202 (docs/api.md "Operation status") never reaches a caller:
 * api() follows the operation, then reads again (GET) or answers undefined.
 */
type Followed<T, M extends Method> = T extends Schemas['OperationAccepted'] ? (M extends 'get' ? never : undefined) : T;

/** The JSON answer of a successful call (undefined for 204). */
export type ResponseOf<P extends keyof paths, M extends Method> = Operation<P, M> extends {
  responses: infer R;
}
  ? Followed<{ [S in keyof R & Success]: JsonContent<R[S]> }[keyof R & Success], M>
  : never;

/** The JSON request body of an operation (never: it takes none). */
export type BodyOf<P extends keyof paths, M extends Method> = Operation<P, M> extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;

type ParamsOf<P extends keyof paths, M extends Method, Where extends 'path' | 'query'> = Operation<
  P,
  M
> extends { parameters: { [K in Where]?: infer Q } }
  ? Q
  : never;

export interface CallOptions<P extends keyof paths, M extends Method> {
  path?: ParamsOf<P, M, 'path'>;
  query?: ParamsOf<P, M, 'query'>;
  body?: BodyOf<P, M>;
  signal?: AbortSignal;
}

/** Fills a path template's {params} and appends the defined query values. */
export function buildURL(
  template: string,
  pathParams?: Record<string, string | number> | null,
  query?: Record<string, string | number | boolean | null | undefined> | null,
): string {
  const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const v = pathParams?.[name];
    if (v === undefined) throw new Error(`path parameter ${name} of ${template} is missing`);
    return encodeURIComponent(String(v));
  });
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v !== undefined && v !== null && v !== '') qs.set(k, String(v));
  }
  const s = qs.toString();
  return s ? `${path}?${s}` : path;
}

/** Calls one operation of the API document. */
export function call<M extends Method, P extends PathsWith<M>>(
  method: M,
  path: P,
  opts: CallOptions<P, M> = {},
): Promise<ResponseOf<P, M>> {
  const url = buildURL(
    path,
    opts.path as Record<string, string | number> | undefined,
    opts.query as Record<string, string | number | boolean | undefined> | undefined,
  );
  return api<ResponseOf<P, M>>(url, { method: method.toUpperCase(), body: opts.body, signal: opts.signal });
}
