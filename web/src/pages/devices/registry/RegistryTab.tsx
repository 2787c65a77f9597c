// The device page's Registry tab (Windows devices): a key tree whose
// children load when a key is opened, the selected key's values, and
// key and value changes, each a device operation (docs/api.md "Registry").
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import CircularProgress from '@mui/material/CircularProgress';
import IconButton from '@mui/material/IconButton';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import Typography from '@mui/material/Typography';
import ChevronRightIcon from '@mui/icons-material/ChevronRight';
import ExpandMoreIcon from '@mui/icons-material/ExpandMore';
import { call, type Schema } from '../../../api/typed';
import { ErrorAlert } from '../../../components/ErrorAlert';
import { useNotify } from '../../../toasts/notify';
import { ConfirmDialog } from '../../../components/ConfirmDialog';
import { operationErrorToast } from '../operationErrors';
import { KeyNameDialog } from './KeyNameDialog';
import { displayData, isWritable } from './valueData';
import { ValueDialog } from './ValueDialog';

type RegistryValue = Schema<'RegistryValue'>;

const registryKey = (hostname: string) => ['registry', hostname] as const;
const childrenKey = (hostname: string, path: string) => [...registryKey(hostname), 'children', path.toLowerCase()] as const;

function useChildren(hostname: string, path: string, enabled = true) {
  return useQuery({
    queryKey: childrenKey(hostname, path),
    queryFn: ({ signal }) =>
      call('get', '/api/device/registry/{hostname}/children', { path: { hostname }, query: { path }, signal }),
    enabled,
    staleTime: 30_000,
  });
}

function parentOf(path: string): string {
  const i = path.lastIndexOf('\\');
  return i < 0 ? path : path.slice(0, i);
}

function KeyNode({
  hostname,
  path,
  name,
  depth,
  selected,
  onSelect,
}: {
  hostname: string;
  path: string;
  name: string;
  depth: number;
  selected: string | null;
  onSelect: (path: string) => void;
}) {
  const [open, setOpen] = useState(false);
  const kids = useChildren(hostname, path, open);
  const isSelected = selected?.toLowerCase() === path.toLowerCase();
  return (
    <li role="treeitem" aria-expanded={open} aria-selected={isSelected} aria-label={path}>
      <Box sx={{ display: 'flex', alignItems: 'center', pl: depth * 1.5 }}>
        <IconButton size="small" aria-label={`${open ? 'Collapse' : 'Expand'} ${path}`} onClick={() => setOpen(!open)}>
          {open ? <ExpandMoreIcon fontSize="small" /> : <ChevronRightIcon fontSize="small" />}
        </IconButton>
        <Box
          component="button"
          onClick={() => onSelect(path)}
          sx={{
            border: 0,
            background: isSelected ? 'rgba(25,118,210,0.12)' : 'none',
            cursor: 'pointer',
            font: 'inherit',
            fontSize: 13,
            textAlign: 'left',
            px: 0.5,
            borderRadius: 0.5,
          }}
        >
          {name}
        </Box>
        {open && kids.isFetching && <CircularProgress size={12} sx={{ ml: 1 }} />}
      </Box>
      {open && kids.isError && <Box sx={{ pl: depth * 1.5 + 4, fontSize: 12, color: 'error.main' }}>Could not open</Box>}
      {open && kids.data && kids.data.subkeys.length > 0 && (
        <Box component="ul" role="group" sx={{ listStyle: 'none', m: 0, p: 0 }}>
          {kids.data.subkeys.map((k) => (
            <KeyNode key={k.path} hostname={hostname} path={k.path} name={k.name} depth={depth + 1} selected={selected} onSelect={onSelect} />
          ))}
        </Box>
      )}
    </li>
  );
}

type Dialog =
  | { kind: 'new-key' }
  | { kind: 'rename-key' }
  | { kind: 'delete-key' }
  | { kind: 'new-value' }
  | { kind: 'edit-value'; value: RegistryValue }
  | { kind: 'delete-value'; value: RegistryValue };

export function RegistryTab({ hostname }: { hostname: string }) {
  const [selected, setSelected] = useState<string | null>(null);
  const [dialog, setDialog] = useState<Dialog | null>(null);
  const queryClient = useQueryClient();
  const notify = useNotify();
  const roots = useQuery({
    queryKey: [...registryKey(hostname), 'roots'],
    queryFn: ({ signal }) => call('get', '/api/device/registry/{hostname}/roots', { path: { hostname }, signal }),
    staleTime: Infinity,
  });
  const current = useChildren(hostname, selected ?? '', selected !== null);
  const isRoot = selected !== null && !selected.includes('\\');

  const refresh = () => queryClient.invalidateQueries({ queryKey: registryKey(hostname) });
  const mutation = useMutation({
    mutationFn: async (d: { what: string; run: () => Promise<unknown>; after?: () => void }) => {
      await d.run();
      return d;
    },
    onSuccess: (d) => {
      setDialog(null);
      d.after?.();
      notify({ title: d.what, message: 'Done.', variant: 'info', icon: 'device' });
      void refresh();
    },
    onError: (error, d) => notify(operationErrorToast(error, d.what)),
  });
  const run = (what: string, fn: () => Promise<unknown>, after?: () => void) => mutation.mutate({ what, run: fn, after });

  if (roots.isError) return <ErrorAlert error={roots.error} />;
  if (roots.isPending) {
    return (
      <Box role="status" sx={{ display: 'flex', alignItems: 'center', gap: 1.5, py: 2 }}>
        <CircularProgress size={18} /> Asking the agent for the registry…
      </Box>
    );
  }
  const p = { hostname };
  const sel = selected ?? '';

  return (
    <Box sx={{ display: 'flex', gap: 2, alignItems: 'flex-start', minHeight: 360 }}>
      <Box
        component="ul"
        role="tree"
        aria-label="Registry keys"
        sx={{ listStyle: 'none', m: 0, p: 1, width: 320, flexShrink: 0, border: 1, borderColor: 'divider', borderRadius: 1, overflow: 'auto', maxHeight: 640 }}
      >
        {roots.data.roots.map((r) => (
          <KeyNode key={r.path} hostname={hostname} path={r.path} name={r.label} depth={0} selected={selected} onSelect={setSelected} />
        ))}
      </Box>
      <Box sx={{ flex: 1, minWidth: 0 }}>
        {selected === null ? (
          <Typography color="text.secondary" sx={{ fontSize: 14 }}>
            Select a key to see its values.
          </Typography>
        ) : (
          <>
            <Box sx={{ display: 'flex', alignItems: 'center', gap: 1, mb: 1, flexWrap: 'wrap' }}>
              <Typography sx={{ fontFamily: 'monospace', fontSize: 13, flex: 1, wordBreak: 'break-all' }} data-testid="registry-path">
                {selected}
              </Typography>
              <Button size="small" variant="outlined" onClick={() => setDialog({ kind: 'new-key' })}>
                New key
              </Button>
              <Button size="small" variant="outlined" disabled={isRoot} onClick={() => setDialog({ kind: 'rename-key' })}>
                Rename key
              </Button>
              <Button size="small" variant="outlined" color="error" disabled={isRoot} onClick={() => setDialog({ kind: 'delete-key' })}>
                Delete key
              </Button>
              <Button size="small" variant="contained" onClick={() => setDialog({ kind: 'new-value' })}>
                New value
              </Button>
            </Box>
            {current.isError && <ErrorAlert error={current.error} />}
            {current.isPending && <CircularProgress size={18} />}
            {current.data?.truncated && (
              <Alert severity="info" variant="outlined" sx={{ mb: 1 }}>
                This key is too large to list whole: some entries are left out, and values over 64 KiB are shown without their data.
              </Alert>
            )}
            {current.data && (
              <Table size="small" aria-label="Values">
                <TableHead>
                  <TableRow>
                    <TableCell>Name</TableCell>
                    <TableCell>Type</TableCell>
                    <TableCell>Data</TableCell>
                    <TableCell align="right">Actions</TableCell>
                  </TableRow>
                </TableHead>
                <TableBody>
                  {current.data.values.length === 0 && (
                    <TableRow>
                      <TableCell colSpan={4} sx={{ color: 'text.secondary' }}>
                        No values.
                      </TableCell>
                    </TableRow>
                  )}
                  {current.data.values.map((v) => {
                    const label = v.name || '(Default)';
                    return (
                      <TableRow key={v.name}>
                        <TableCell>{label}</TableCell>
                        <TableCell>{v.type}</TableCell>
                        <TableCell sx={{ fontFamily: 'monospace', fontSize: 12, wordBreak: 'break-all' }}>{displayData(v.type, v.data)}</TableCell>
                        <TableCell align="right" sx={{ whiteSpace: 'nowrap' }}>
                          <Button size="small" disabled={!isWritable(v.type) || v.data === null} aria-label={`Edit ${label}`} onClick={() => setDialog({ kind: 'edit-value', value: v })}>
                            Edit
                          </Button>
                          <Button size="small" color="error" aria-label={`Delete ${label}`} onClick={() => setDialog({ kind: 'delete-value', value: v })}>
                            Delete
                          </Button>
                        </TableCell>
                      </TableRow>
                    );
                  })}
                </TableBody>
              </Table>
            )}
          </>
        )}
      </Box>
      {dialog?.kind === 'new-key' && (
        <KeyNameDialog
          title={`New key in ${sel}`}
          confirm="Create"
          busy={mutation.isPending}
          onClose={() => setDialog(null)}
          onSave={(name) =>
            run(`Create key ${name}`, () => call('post', '/api/device/registry/{hostname}/key/create', { path: p, body: { path: `${sel}\\${name}` } }))
          }
        />
      )}
      {dialog?.kind === 'rename-key' && (
        <KeyNameDialog
          title={`Rename ${sel}`}
          initial={sel.slice(sel.lastIndexOf('\\') + 1)}
          confirm="Rename"
          busy={mutation.isPending}
          onClose={() => setDialog(null)}
          onSave={(name) =>
            run(
              `Rename key to ${name}`,
              () => call('post', '/api/device/registry/{hostname}/key/rename', { path: p, body: { path: sel, new_name: name } }),
              () => setSelected(`${parentOf(sel)}\\${name}`),
            )
          }
        />
      )}
      {dialog?.kind === 'delete-key' && (
        <ConfirmDialog
          title={`Delete ${sel}?`}
          confirm="Delete"
          danger
          onClose={() => setDialog(null)}
          onConfirm={() =>
            run(
              `Delete key ${sel}`,
              () => call('post', '/api/device/registry/{hostname}/key/delete', { path: p, body: { path: sel } }),
              () => setSelected(parentOf(sel)),
            )
          }
        >
          The key is deleted with every subkey and value below it. This cannot be undone.
        </ConfirmDialog>
      )}
      {dialog?.kind === 'new-value' && (
        <ValueDialog
          keyPath={sel}
          busy={mutation.isPending}
          onClose={() => setDialog(null)}
          onSave={(value) =>
            run(`Create value ${value.name || '(Default)'}`, () =>
              call('post', '/api/device/registry/{hostname}/value/create', { path: p, body: { path: sel, value } }),
            )
          }
        />
      )}
      {dialog?.kind === 'edit-value' && (
        <ValueDialog
          keyPath={sel}
          existing={dialog.value}
          busy={mutation.isPending}
          onClose={() => setDialog(null)}
          onSave={(value) =>
            run(`Set value ${value.name || '(Default)'}`, () =>
              call('post', '/api/device/registry/{hostname}/value/update', { path: p, body: { path: sel, value } }),
            )
          }
        />
      )}
      {dialog?.kind === 'delete-value' && (
        <ConfirmDialog
          title={`Delete value ${dialog.value.name || '(Default)'}?`}
          confirm="Delete"
          danger
          onClose={() => setDialog(null)}
          onConfirm={() =>
            run(`Delete value ${dialog.value.name || '(Default)'}`, () =>
              call('post', '/api/device/registry/{hostname}/value/delete', { path: p, body: { path: sel, name: dialog.value.name } }),
            )
          }
        >
          The value is removed from {sel}.
        </ConfirmDialog>
      )}
    </Box>
  );
}
