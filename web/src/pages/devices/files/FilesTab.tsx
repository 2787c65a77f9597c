// The device page's Files tab: the device's roots, breadcrumbs and the
// current directory's entries; a text editor; new folder, rename, copy or
// cut and paste, delete; upload (drop files and folders, conflicts asked
// first) and download with progress. Each browse or change is a device
// operation (docs/api.md "Files"); transfers are durable workflows.
import { useRef, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Breadcrumbs from '@mui/material/Breadcrumbs';
import Button from '@mui/material/Button';
import Checkbox from '@mui/material/Checkbox';
import CircularProgress from '@mui/material/CircularProgress';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import LinearProgress from '@mui/material/LinearProgress';
import Link from '@mui/material/Link';
import Stack from '@mui/material/Stack';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { call, type Schema } from '../../../api/typed';
import { ErrorAlert } from '../../../components/ErrorAlert';
import { useNotify } from '../../../toasts/notify';
import { ConfirmDialog } from '../../../components/ConfirmDialog';
import { operationErrorToast } from '../operationErrors';
import {
  cancelTransfer,
  contentURL,
  followTransfer,
  readDropped,
  startDownload,
  startUpload,
  topLevelNames,
  type ConflictPolicy,
  type TransferSnapshot,
  type UploadFile,
} from './transfers';

type Entry = Schema<'FileEntry'>;

/** The separator of a path's platform: backslash for C:\… and \\server\…. */
export function separatorOf(path: string): string {
  return /^[A-Za-z]:[\\/]/.test(path) || path.startsWith('\\\\') ? '\\' : '/';
}

export function joinPath(dir: string, name: string): string {
  const sep = separatorOf(dir);
  return dir.endsWith(sep) ? dir + name : dir + sep + name;
}

/** The breadcrumbs of a path: [label, path] from its root. */
export function crumbs(path: string): { label: string; path: string }[] {
  const sep = separatorOf(path);
  if (sep === '/') {
    const parts = path.split('/').filter(Boolean);
    return [{ label: '/', path: '/' }, ...parts.map((p, i) => ({ label: p, path: '/' + parts.slice(0, i + 1).join('/') }))];
  }
  let root: string;
  let rest: string[];
  if (path.startsWith('\\\\')) {
    const parts = path.slice(2).split('\\').filter(Boolean);
    root = `\\\\${parts[0]}\\${parts[1] ?? ''}`;
    rest = parts.slice(2);
  } else {
    root = path.slice(0, 2) + '\\';
    rest = path.slice(3).split(/[\\/]/).filter(Boolean);
  }
  const out = [{ label: root, path: root }];
  rest.forEach((p, i) => out.push({ label: p, path: joinPath(out[i].path, p) }));
  return out;
}

function formatSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(1)} GiB`;
}

const filesKey = (hostname: string) => ['files', hostname] as const;

type DialogState =
  | { kind: 'mkdir' }
  | { kind: 'new-file' }
  | { kind: 'rename'; entry: Entry }
  | { kind: 'delete'; entries: Entry[] }
  | { kind: 'edit'; path: string }
  | { kind: 'conflicts'; files: UploadFile[]; directories: string[]; conflicts: Entry[] };

function NameDialog({ title, initial = '', confirm, busy, onSave, onClose }: {
  title: string;
  initial?: string;
  confirm: string;
  busy: boolean;
  onSave: (name: string) => void;
  onClose: () => void;
}) {
  const [name, setName] = useState(initial);
  const bad = name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name);
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="xs">
      <DialogTitle>{title}</DialogTitle>
      <DialogContent sx={{ pt: '8px !important' }}>
        <TextField
          autoFocus
          fullWidth
          size="small"
          label="Name"
          value={name}
          onChange={(e) => setName(e.target.value)}
          error={name !== initial && bad}
          helperText={name !== initial && bad ? 'A name without / or \\' : ' '}
        />
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>Cancel</Button>
        <Button variant="contained" disabled={busy || bad || name === initial} onClick={() => onSave(name)}>
          {confirm}
        </Button>
      </DialogActions>
    </Dialog>
  );
}

function EditorDialog({ hostname, path, isNew, onSaved, onClose }: {
  hostname: string;
  path: string;
  isNew: boolean;
  onSaved: () => void;
  onClose: () => void;
}) {
  const notify = useNotify();
  const [content, setContent] = useState<string | null>(isNew ? '' : null);
  const text = useQuery({
    queryKey: [...filesKey(hostname), 'text', path],
    queryFn: ({ signal }) => call('get', '/api/device/files/{hostname}/text', { path: { hostname }, query: { path }, signal }),
    enabled: !isNew,
    gcTime: 0,
  });
  const value = content ?? text.data?.content ?? '';
  const save = useMutation({
    mutationFn: () => call('post', '/api/device/files/{hostname}/text', { path: { hostname }, body: { path, content: value } }),
    onSuccess: () => {
      notify({ title: `Save ${path}`, message: 'Saved.', variant: 'info', icon: 'device' });
      onSaved();
    },
    onError: (e) => notify(operationErrorToast(e, `Save ${path}`)),
  });
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="lg">
      <DialogTitle sx={{ fontFamily: 'monospace', fontSize: 15 }}>{path}</DialogTitle>
      <DialogContent>
        {text.isError && <ErrorAlert error={text.error} />}
        {!isNew && text.isPending && <CircularProgress size={20} />}
        {(isNew || text.data) && (
          <TextField
            multiline
            fullWidth
            minRows={20}
            maxRows={30}
            value={value}
            onChange={(e) => setContent(e.target.value)}
            slotProps={{ htmlInput: { 'aria-label': 'File content', spellCheck: false, style: { fontFamily: 'monospace', fontSize: 13 } } }}
          />
        )}
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>Close</Button>
        <Button variant="contained" disabled={save.isPending || (!isNew && !text.data)} onClick={() => save.mutate()}>
          Save
        </Button>
      </DialogActions>
    </Dialog>
  );
}

/** A running or finished transfer, with its progress and a cancel button. */
function TransferRow({ hostname, t }: { hostname: string; t: TransferSnapshot }) {
  const pct = t.bytes_total > 0 ? Math.round((100 * t.bytes_done) / t.bytes_total) : 0;
  const running = t.state === 'queued' || t.state === 'running';
  return (
    <Box sx={{ mb: 1 }} aria-label={`${t.direction} ${t.content_name || t.transfer_id}`}>
      <Stack direction="row" spacing={1} sx={{ alignItems: 'center' }}>
        <Typography variant="body2" sx={{ flex: 1 }}>
          {t.direction === 'upload' ? 'Upload' : 'Download'} {t.content_name || t.items.map((i) => i.name).join(', ')} — {t.state}
          {t.error ? `: ${t.error.message}` : ''}
        </Typography>
        {running && (
          <Button size="small" onClick={() => void cancelTransfer(hostname, t.transfer_id)}>
            Cancel
          </Button>
        )}
      </Stack>
      <LinearProgress variant="determinate" value={t.state === 'completed' ? 100 : pct} aria-label="Transfer progress" />
    </Box>
  );
}

export function FilesTab({ hostname }: { hostname: string }) {
  const [cwd, setCwd] = useState<string | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [clipboard, setClipboard] = useState<{ paths: string[]; cut: boolean } | null>(null);
  const [dialog, setDialog] = useState<DialogState | null>(null);
  const [transfers, setTransfers] = useState<Record<string, TransferSnapshot>>({});
  const [dragging, setDragging] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);
  const queryClient = useQueryClient();
  const notify = useNotify();

  const roots = useQuery({
    queryKey: [...filesKey(hostname), 'roots'],
    queryFn: ({ signal }) => call('get', '/api/device/files/{hostname}/roots', { path: { hostname }, signal }),
    staleTime: Infinity,
  });
  const dir = cwd ?? roots.data?.roots[0]?.path ?? null;
  const listing = useQuery({
    queryKey: [...filesKey(hostname), 'children', dir],
    queryFn: ({ signal }) => call('get', '/api/device/files/{hostname}/children', { path: { hostname }, query: { path: dir! }, signal }),
    enabled: dir !== null,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: [...filesKey(hostname), 'children'] });
  const go = (p: string) => {
    setCwd(p);
    setSelected(new Set());
  };

  const mutation = useMutation({
    mutationFn: async (d: { what: string; run: () => Promise<unknown> }) => {
      await d.run();
      return d;
    },
    onSuccess: (d) => {
      setDialog(null);
      setSelected(new Set());
      notify({ title: d.what, message: 'Done.', variant: 'info', icon: 'device' });
      void refresh();
    },
    onError: (error, d) => notify(operationErrorToast(error, d.what)),
  });
  const run = (what: string, fn: () => Promise<unknown>) => mutation.mutate({ what, run: fn });

  const track = (first: TransferSnapshot) =>
    followTransfer(hostname, first, (s) => setTransfers((all) => ({ ...all, [s.transfer_id]: s }))).then((s) => {
      if (s.direction === 'download' && s.state === 'completed') window.location.assign(contentURL(hostname, s.transfer_id));
      if (s.direction === 'upload') void refresh();
    });

  const upload = (files: UploadFile[], directories: string[], conflict: ConflictPolicy) => {
    if (!dir) return;
    setDialog(null);
    startUpload(hostname, dir, files, conflict, directories)
      .then(track)
      .catch((e) => notify(operationErrorToast(e, 'Upload')));
  };
  const offerUpload = async (files: UploadFile[], directories: string[]) => {
    if (!dir || (files.length === 0 && directories.length === 0)) return;
    try {
      const res = await call('post', '/api/device/files/{hostname}/upload/conflicts', {
        path: { hostname },
        body: { destination: dir, names: topLevelNames(files, directories) },
      });
      if (!res) {
        // The check outlived its request: its answer is not kept.
        notify({ title: 'Upload', message: 'The device took long to check the names; try the upload again.', variant: 'warning', icon: 'warning' });
        return;
      }
      if (res.conflicts.length > 0) setDialog({ kind: 'conflicts', files, directories, conflicts: res.conflicts });
      else upload(files, directories, 'rename');
    } catch (e) {
      notify(operationErrorToast(e, 'Upload'));
    }
  };
  const download = (paths: string[]) =>
    startDownload(hostname, paths)
      .then(track)
      .catch((e) => notify(operationErrorToast(e, 'Download')));

  if (roots.isError) return <ErrorAlert error={roots.error} />;
  if (roots.isPending || dir === null) return <CircularProgress size={24} />;

  const entries = listing.data?.entries ?? [];
  const chosen = entries.filter((e) => selected.has(e.path));
  const toggle = (p: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(p)) n.delete(p);
      else n.add(p);
      return n;
    });

  return (
    <Box
      onDragOver={(e) => {
        e.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={(e) => {
        e.preventDefault();
        setDragging(false);
        void readDropped(e.dataTransfer.items).then(({ files, directories }) => offerUpload(files, directories));
      }}
      sx={{ outline: dragging ? '2px dashed' : 'none', outlineColor: 'primary.main', p: 0.5 }}
    >
      <Stack direction="row" spacing={1} sx={{ mb: 1, flexWrap: 'wrap', alignItems: 'center' }}>
        {roots.data.roots.length > 1 &&
          roots.data.roots.map((r) => (
            <Button key={r.path} size="small" variant={dir.startsWith(r.path) ? 'contained' : 'outlined'} onClick={() => go(r.path)}>
              {r.label}
            </Button>
          ))}
        <Button size="small" onClick={() => setDialog({ kind: 'mkdir' })}>New folder</Button>
        <Button size="small" onClick={() => setDialog({ kind: 'new-file' })}>New file</Button>
        <Button size="small" disabled={chosen.length !== 1} onClick={() => setDialog({ kind: 'rename', entry: chosen[0] })}>Rename</Button>
        <Button size="small" disabled={chosen.length === 0} onClick={() => setClipboard({ paths: chosen.map((e) => e.path), cut: false })}>Copy</Button>
        <Button size="small" disabled={chosen.length === 0} onClick={() => setClipboard({ paths: chosen.map((e) => e.path), cut: true })}>Cut</Button>
        <Button
          size="small"
          disabled={!clipboard}
          onClick={() =>
            clipboard &&
            run(clipboard.cut ? `Move to ${dir}` : `Copy to ${dir}`, async () => {
              const route = clipboard.cut ? '/api/device/files/{hostname}/move' : '/api/device/files/{hostname}/paste';
              await call('post', route, { path: { hostname }, body: { paths: clipboard.paths, destination: dir } });
              if (clipboard.cut) setClipboard(null);
            })
          }
        >
          Paste{clipboard ? ` (${clipboard.paths.length})` : ''}
        </Button>
        <Button size="small" color="error" disabled={chosen.length === 0} onClick={() => setDialog({ kind: 'delete', entries: chosen })}>Delete</Button>
        <Button size="small" disabled={chosen.length === 0} onClick={() => void download(chosen.map((e) => e.path))}>Download</Button>
        <Button size="small" onClick={() => fileInput.current?.click()}>Upload</Button>
        <input
          ref={fileInput}
          type="file"
          multiple
          hidden
          data-testid="upload-input"
          onChange={(e) => {
            const files = Array.from(e.target.files ?? []).map((file) => ({ relativePath: file.name, file }));
            e.target.value = '';
            void offerUpload(files, []);
          }}
        />
      </Stack>

      <Breadcrumbs aria-label="Path" sx={{ mb: 1, fontFamily: 'monospace' }}>
        {crumbs(dir).map((c) => (
          <Link key={c.path} component="button" underline="hover" onClick={() => go(c.path)}>
            {c.label}
          </Link>
        ))}
      </Breadcrumbs>

      {Object.values(transfers).map((t) => (
        <TransferRow key={t.transfer_id} hostname={hostname} t={t} />
      ))}

      {listing.isError && <ErrorAlert error={listing.error} />}
      {listing.isPending && <CircularProgress size={20} />}
      {listing.data?.truncated && <Alert severity="info">Only the first {entries.length} entries are shown.</Alert>}
      {listing.data && (
        <Table size="small" aria-label="Entries">
          <TableHead>
            <TableRow>
              <TableCell padding="checkbox" />
              <TableCell>Name</TableCell>
              <TableCell>Type</TableCell>
              <TableCell align="right">Size</TableCell>
              <TableCell>Modified</TableCell>
            </TableRow>
          </TableHead>
          <TableBody>
            {entries.length === 0 && (
              <TableRow>
                <TableCell colSpan={5}>Empty folder</TableCell>
              </TableRow>
            )}
            {entries.map((e) => (
              <TableRow key={e.path} hover selected={selected.has(e.path)}>
                <TableCell padding="checkbox">
                  <Checkbox size="small" checked={selected.has(e.path)} onChange={() => toggle(e.path)} slotProps={{ input: { 'aria-label': `Select ${e.name}` } }} />
                </TableCell>
                <TableCell>
                  <Link
                    component="button"
                    underline="hover"
                    onClick={() => (e.type === 'dir' ? go(e.path) : setDialog({ kind: 'edit', path: e.path }))}
                  >
                    {e.name}
                  </Link>
                </TableCell>
                <TableCell>{e.type}</TableCell>
                <TableCell align="right">{e.type === 'dir' ? '' : formatSize(e.size)}</TableCell>
                <TableCell>{new Date(e.modified_at).toLocaleString()}</TableCell>
              </TableRow>
            ))}
          </TableBody>
        </Table>
      )}

      {dialog?.kind === 'mkdir' && (
        <NameDialog
          title="New folder"
          confirm="Create"
          busy={mutation.isPending}
          onClose={() => setDialog(null)}
          onSave={(name) =>
            run(`Create folder ${name}`, () => call('post', '/api/device/files/{hostname}/mkdir', { path: { hostname }, body: { path: joinPath(dir, name) } }))
          }
        />
      )}
      {dialog?.kind === 'new-file' && (
        <NameDialog
          title="New file"
          confirm="Create"
          busy={false}
          onClose={() => setDialog(null)}
          onSave={(name) => setDialog({ kind: 'edit', path: joinPath(dir, name) })}
        />
      )}
      {dialog?.kind === 'rename' && (
        <NameDialog
          title={`Rename ${dialog.entry.name}`}
          initial={dialog.entry.name}
          confirm="Rename"
          busy={mutation.isPending}
          onClose={() => setDialog(null)}
          onSave={(name) =>
            run(`Rename ${dialog.entry.name}`, () =>
              call('post', '/api/device/files/{hostname}/rename', { path: { hostname }, body: { path: dialog.entry.path, new_name: name } }),
            )
          }
        />
      )}
      {dialog?.kind === 'delete' && (
        <ConfirmDialog
          title={`Delete ${dialog.entries.length === 1 ? dialog.entries[0].name : `${dialog.entries.length} items`}?`}
          confirm="Delete"
          danger
          onClose={() => setDialog(null)}
          onConfirm={() =>
            run(`Delete ${dialog.entries.map((e) => e.name).join(', ')}`, () =>
              call('post', '/api/device/files/{hostname}/delete', { path: { hostname }, body: { paths: dialog.entries.map((e) => e.path) } }),
            )
          }
        >
          Folders are deleted with everything in them. Links are removed, not what they point to.
        </ConfirmDialog>
      )}
      {dialog?.kind === 'edit' && (
        <EditorDialog
          hostname={hostname}
          path={dialog.path}
          isNew={!entries.some((e) => e.path === dialog.path)}
          onClose={() => setDialog(null)}
          onSaved={() => {
            setDialog(null);
            void refresh();
          }}
        />
      )}
      {dialog?.kind === 'conflicts' && (
        <Dialog open onClose={() => setDialog(null)}>
          <DialogTitle>Some names already exist</DialogTitle>
          <DialogContent>
            <Typography variant="body2" sx={{ mb: 1 }}>
              {dialog.conflicts.map((c) => c.name).join(', ')} already exist in {dir}.
            </Typography>
          </DialogContent>
          <DialogActions>
            <Button onClick={() => setDialog(null)}>Cancel</Button>
            <Button onClick={() => upload(dialog.files, dialog.directories, 'skip')}>Skip existing</Button>
            <Button onClick={() => upload(dialog.files, dialog.directories, 'rename')}>Keep both</Button>
            <Button color="error" onClick={() => upload(dialog.files, dialog.directories, 'overwrite')}>Overwrite</Button>
          </DialogActions>
        </Dialog>
      )}
    </Box>
  );
}
