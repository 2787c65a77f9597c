// Uploads and downloads (docs/api.md "File transfers", built by the
// transfers routes): a multipart POST or a JSON POST starts a transfer whose
// snapshot is polled until it ends; a download's artifact is then fetched
// from /content.
import { ApiError, CSRF_HEADER, api, csrfToken } from '../../../api/client';
import type { Schema } from '../../../api/typed';

/** A transfer's snapshot, as the Engine sends it (docs/api.md "File transfers"). */
export type TransferSnapshot = Schema<'FileTransfer'>;
export type TransferState = TransferSnapshot['state'];

export type ConflictPolicy = 'overwrite' | 'skip' | 'rename';

/** One file picked or dropped, with its path relative to the destination ("a/b.txt"). */
export interface UploadFile {
  relativePath: string;
  file: File;
}

const base = (hostname: string) => `/api/device/files/${encodeURIComponent(hostname)}`;

export function isFinished(s: TransferSnapshot): boolean {
  return s.state === 'completed' || s.state === 'failed' || s.state === 'cancelled';
}

/** The first path component of each upload: what may clash in the destination. */
export function topLevelNames(files: UploadFile[], directories: string[] = []): string[] {
  const names = new Set<string>();
  for (const p of [...files.map((f) => f.relativePath), ...directories]) names.add(p.split('/')[0]);
  return [...names].filter((n) => n !== '');
}

/** Starts an upload: multipart destination, conflict, manifest, then one part per file. */
export async function startUpload(
  hostname: string,
  destination: string,
  files: UploadFile[],
  conflict: ConflictPolicy,
  directories: string[] = [],
): Promise<TransferSnapshot> {
  const form = new FormData();
  form.append('destination', destination);
  form.append('conflict', conflict);
  if (directories.length > 0) form.append('manifest', JSON.stringify({ directories }));
  for (const f of files) form.append('file', f.file, f.relativePath);
  const headers: Record<string, string> = { Accept: 'application/json' };
  const csrf = csrfToken();
  if (csrf) headers[CSRF_HEADER] = csrf;
  const res = await fetch(`${base(hostname)}/upload`, { method: 'POST', body: form, headers, credentials: 'same-origin' });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    throw new ApiError({
      status: res.status,
      code: typeof body.error === 'string' ? body.error : 'upload_failed',
      message: typeof body.message === 'string' ? body.message : `The Engine answered ${res.status}`,
      fields: body.fields ?? null,
      retryAfter: null,
      requestId: res.headers.get('X-Request-Id'),
    });
  }
  return body as TransferSnapshot;
}

export function startDownload(hostname: string, paths: string[]): Promise<TransferSnapshot> {
  return api<TransferSnapshot>(`${base(hostname)}/download`, { method: 'POST', body: { paths } });
}

export function transferStatus(hostname: string, id: string, signal?: AbortSignal): Promise<TransferSnapshot> {
  return api<TransferSnapshot>(`${base(hostname)}/transfer/${encodeURIComponent(id)}/status`, { signal });
}

export function cancelTransfer(hostname: string, id: string): Promise<TransferSnapshot> {
  return api<TransferSnapshot>(`${base(hostname)}/transfer/${encodeURIComponent(id)}/cancel`, { method: 'POST', body: {} });
}

export function contentURL(hostname: string, id: string): string {
  return `${base(hostname)}/transfer/${encodeURIComponent(id)}/content`;
}

/**
 * Polls a transfer until it ends, reporting each snapshot. wait is the pause
 * between polls (injected so tests drive it).
 */
export async function followTransfer(
  hostname: string,
  first: TransferSnapshot,
  onUpdate: (s: TransferSnapshot) => void,
  wait: () => Promise<void> = () => new Promise((r) => setTimeout(r, 1000)),
  signal?: AbortSignal,
): Promise<TransferSnapshot> {
  let s = first;
  onUpdate(s);
  while (!isFinished(s)) {
    await wait();
    if (signal?.aborted) return s;
    s = await transferStatus(hostname, s.transfer_id, signal);
    onUpdate(s);
  }
  return s;
}

/** Reads dropped items, folders included (webkitGetAsEntry), into files and empty directories. */
export async function readDropped(items: DataTransferItemList): Promise<{ files: UploadFile[]; directories: string[] }> {
  const files: UploadFile[] = [];
  const directories: string[] = [];
  const entries: FileSystemEntry[] = [];
  for (const item of Array.from(items)) {
    const e = item.webkitGetAsEntry?.();
    if (e) entries.push(e);
  }
  const walk = async (entry: FileSystemEntry, prefix: string): Promise<void> => {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isFile) {
      const file = await new Promise<File>((res, rej) => (entry as FileSystemFileEntry).file(res, rej));
      files.push({ relativePath: rel, file });
      return;
    }
    const reader = (entry as FileSystemDirectoryEntry).createReader();
    const children: FileSystemEntry[] = [];
    for (;;) {
      const batch = await new Promise<FileSystemEntry[]>((res, rej) => reader.readEntries(res, rej));
      if (batch.length === 0) break;
      children.push(...batch);
    }
    if (children.length === 0) directories.push(rel);
    for (const c of children) await walk(c, rel);
  };
  for (const e of entries) await walk(e, '');
  return { files, directories };
}
