// A site's enrollment codes (docs/api.md "Enrollment codes"): create with an
// expiry and a use limit, copy, rotate and delete, each change confirmed.
import { useState, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import IconButton from '@mui/material/IconButton';
import MenuItem from '@mui/material/MenuItem';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import AddIcon from '@mui/icons-material/Add';
import AutorenewIcon from '@mui/icons-material/Autorenew';
import CheckIcon from '@mui/icons-material/Check';
import ContentCopyIcon from '@mui/icons-material/ContentCopy';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';
import { enrollment } from '../../api/endpoints';
import type { EnrollmentCode } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { fieldError } from '../../components/errors';
import { formatDateTime, formatRelative } from '../../components/format';
import { SITES_QUERY } from '../SiteDialogs';
import { codeLabel, codesKey, useCopy } from './shared';

export const EXPIRY_OPTIONS = [
  { seconds: 3600, label: '1 hour' },
  { seconds: 86400, label: '1 day' },
  { seconds: 604800, label: '7 days' },
  { seconds: 2592000, label: '30 days' },
  { seconds: 31536000, label: '1 year' },
];
export const MAX_USES_LIMIT = 100000;

/** null when `raw` is a whole number from 1 to 100000, else what is wrong. */
export function checkMaxUses(raw: string): string | null {
  const t = raw.trim();
  if (!/^\d+$/.test(t) || Number(t) < 1 || Number(t) > MAX_USES_LIMIT) return `Enter a whole number from 1 to ${MAX_USES_LIMIT}.`;
  return null;
}

function CodeStatus({ code }: { code: EnrollmentCode }) {
  if (code.code_status === 'unreadable')
    return (
      <Tooltip title="Sealed by a master cipher that was reset since. Rotate the code to get a new one.">
        <Chip size="small" color="warning" label="Unreadable" />
      </Tooltip>
    );
  const map: Record<string, { label: string; color: 'success' | 'default' | 'warning' }> = {
    active: { label: 'Active', color: 'success' },
    expired: { label: 'Expired', color: 'default' },
    used_up: { label: 'Used up', color: 'default' },
  };
  const s = map[code.status] ?? { label: code.status, color: 'default' as const };
  return <Chip size="small" label={s.label} color={s.color} variant={s.color === 'success' ? 'filled' : 'outlined'} />;
}

function CreateCodeForm({ siteId }: { siteId: number }) {
  const queryClient = useQueryClient();
  const [expires, setExpires] = useState(604800);
  const [maxUses, setMaxUses] = useState('25');
  const [local, setLocal] = useState<string | null>(null);
  const mutation = useMutation({
    mutationFn: () =>
      enrollment.createCode({ site_id: siteId, expires_in_seconds: expires, max_uses: Number(maxUses.trim()) }),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: codesKey(siteId) });
      // A site's install links are bound to its codes: list the new ones.
      void queryClient.invalidateQueries({ queryKey: SITES_QUERY });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const problem = checkMaxUses(maxUses);
    setLocal(problem);
    if (!problem) mutation.mutate();
  };
  const expiresErr = fieldError(mutation.error, 'expires_in_seconds');
  const usesErr = local ?? fieldError(mutation.error, 'max_uses');
  return (
    <Box component="form" noValidate onSubmit={submit} aria-label="New enrollment code" sx={{ mt: 1.5 }}>
      <ErrorAlert error={mutation.error} fields={['expires_in_seconds', 'max_uses']} />
      <Box sx={{ display: 'flex', gap: 1.5, alignItems: 'flex-start', flexWrap: 'wrap' }}>
        <TextField
          select
          label="Expires after"
          name="expires_in_seconds"
          value={expires}
          onChange={(e) => setExpires(Number(e.target.value))}
          error={Boolean(expiresErr)}
          helperText={expiresErr ?? ' '}
          sx={{ minWidth: 150 }}
        >
          {EXPIRY_OPTIONS.map((o) => (
            <MenuItem key={o.seconds} value={o.seconds}>
              {o.label}
            </MenuItem>
          ))}
        </TextField>
        <TextField
          label="Max uses"
          name="max_uses"
          value={maxUses}
          onChange={(e) => {
            setMaxUses(e.target.value);
            setLocal(null);
          }}
          error={Boolean(usesErr)}
          helperText={usesErr ?? 'Devices that can enroll with it.'}
          slotProps={{ htmlInput: { inputMode: 'numeric' } }}
          sx={{ width: 200 }}
        />
        <Button type="submit" variant="contained" startIcon={<AddIcon />} disabled={mutation.isPending} sx={{ mt: 0.25 }}>
          {mutation.isPending ? 'Creating…' : 'Create code'}
        </Button>
      </Box>
    </Box>
  );
}

type Confirm = { kind: 'rotate' | 'delete'; code: EnrollmentCode } | null;

function ConfirmCodeDialog({ confirm, onClose }: { confirm: NonNullable<Confirm>; onClose: () => void }) {
  const queryClient = useQueryClient();
  const { kind, code } = confirm;
  const mutation = useMutation({
    mutationFn: (): Promise<unknown> => (kind === 'rotate' ? enrollment.rotateCode(code.id) : enrollment.deleteCode(code.id)),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: codesKey(code.site_id) });
      void queryClient.invalidateQueries({ queryKey: SITES_QUERY });
      onClose();
    },
  });
  const label = codeLabel(code);
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <DialogTitle>{kind === 'rotate' ? `Rotate code ${label}…?` : `Delete code ${label}…?`}</DialogTitle>
      <DialogContent>
        <ErrorAlert error={mutation.error} />
        <DialogContentText sx={{ fontSize: 14 }}>
          {kind === 'rotate'
            ? 'The code gets a new value and its use count starts again at 0. The current value stops working at once; agents that already sent their request carry on. Give installers the new value.'
            : 'Agents can no longer enroll with this code. Requests already made with it carry on and can still be approved.'}
        </DialogContentText>
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} disabled={mutation.isPending}>
          Cancel
        </Button>
        <Button
          variant="contained"
          color={kind === 'delete' ? 'error' : 'primary'}
          onClick={() => mutation.mutate()}
          disabled={mutation.isPending}
        >
          {mutation.isPending ? (kind === 'rotate' ? 'Rotating…' : 'Deleting…') : kind === 'rotate' ? 'Rotate' : 'Delete'}
        </Button>
      </DialogActions>
    </Dialog>
  );
}

export function EnrollmentCodes({
  siteId,
  codes,
  loading,
  error,
}: {
  siteId: number;
  codes: EnrollmentCode[];
  loading: boolean;
  error: unknown;
}) {
  const [confirm, setConfirm] = useState<Confirm>(null);
  const { copied, failed, copy } = useCopy();
  return (
    <Box>
      {error ? <ErrorAlert error={error} /> : null}
      {failed && (
        <Alert severity="warning" variant="outlined" sx={{ mb: 1 }}>
          The browser did not allow copying. Select the code and copy it by hand.
        </Alert>
      )}
      {loading ? (
        <Typography variant="body2" color="text.secondary" role="status">
          Loading codes…
        </Typography>
      ) : codes.length === 0 ? (
        <Typography variant="body2" color="text.secondary" data-testid="no-codes">
          This site has no enrollment codes yet. Create one below.
        </Typography>
      ) : (
        <Table size="small" aria-label="Enrollment codes">
          <TableHead>
            <TableRow>
              <TableCell>Code</TableCell>
              <TableCell>Status</TableCell>
              <TableCell align="right">Uses</TableCell>
              <TableCell>Expires</TableCell>
              <TableCell>Created by</TableCell>
              <TableCell align="right">Actions</TableCell>
            </TableRow>
          </TableHead>
          <TableBody>
            {codes.map((c) => {
              const label = codeLabel(c);
              return (
                <TableRow key={c.id} data-code-id={c.id}>
                  <TableCell sx={{ fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', fontSize: 12.5 }}>
                    {c.code ?? <i>unreadable: rotate it</i>}
                  </TableCell>
                  <TableCell>
                    <CodeStatus code={c} />
                  </TableCell>
                  <TableCell align="right">
                    {c.uses} / {c.max_uses}
                  </TableCell>
                  <TableCell>
                    <time dateTime={c.expires_at} title={formatDateTime(c.expires_at)}>
                      {formatRelative(c.expires_at)}
                    </time>
                  </TableCell>
                  <TableCell>{c.created_by}</TableCell>
                  <TableCell align="right" sx={{ whiteSpace: 'nowrap' }}>
                    <Tooltip title={copied === `code-${c.id}` ? 'Copied' : 'Copy'}>
                      <span>
                        <IconButton
                          size="small"
                          aria-label={`Copy code ${label}`}
                          disabled={!c.code}
                          onClick={() => c.code && void copy(`code-${c.id}`, c.code)}
                        >
                          {copied === `code-${c.id}` ? <CheckIcon fontSize="small" color="success" /> : <ContentCopyIcon fontSize="small" />}
                        </IconButton>
                      </span>
                    </Tooltip>
                    <Tooltip title="Rotate">
                      <IconButton size="small" aria-label={`Rotate code ${label}`} onClick={() => setConfirm({ kind: 'rotate', code: c })}>
                        <AutorenewIcon fontSize="small" />
                      </IconButton>
                    </Tooltip>
                    <Tooltip title="Delete">
                      <IconButton size="small" aria-label={`Delete code ${label}`} onClick={() => setConfirm({ kind: 'delete', code: c })}>
                        <DeleteOutlineIcon fontSize="small" />
                      </IconButton>
                    </Tooltip>
                  </TableCell>
                </TableRow>
              );
            })}
          </TableBody>
        </Table>
      )}
      <CreateCodeForm siteId={siteId} />
      {confirm && <ConfirmCodeDialog confirm={confirm} onClose={() => setConfirm(null)} />}
    </Box>
  );
}
