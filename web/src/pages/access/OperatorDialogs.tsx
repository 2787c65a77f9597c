import { useMemo, useState, type FormEvent, type ReactNode } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import AlertTitle from '@mui/material/AlertTitle';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Checkbox from '@mui/material/Checkbox';
import CircularProgress from '@mui/material/CircularProgress';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import FormControlLabel from '@mui/material/FormControlLabel';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { siteAssignments, sites as sitesApi, users as usersApi } from '../../api/endpoints';
import type { MfaAction, Operator, Role } from '../../api/types';
import { checkConfirmation, checkSecret, checkUsername, MAX_PASSWORD, MIN_SECRET } from '../../auth/validation';
import { ErrorAlert } from '../../components/ErrorAlert';
import { errorCode, fieldError } from '../../components/errors';
import { SITES_QUERY } from '../SiteDialogs';
import { tokensRevokedSentence } from '../../tokens/revoked';

export const USERS_QUERY = ['users'] as const;
export const ASSIGNMENTS_QUERY = 'site-assignments';

export const ROLE_LABEL: Record<string, string> = { admin: 'Administrator', operator: 'Operator' };

/** What happened, for the notice above the grid. */
export type Done = (message: string) => void;

function withPeriod(text: string): string {
  return /[.!?]$/.test(text.trim()) ? text.trim() : `${text.trim()}.`;
}

/** A 409 last_admin answer, said plainly; any other error as usual. */
export function ActionError({ error, fields }: { error: unknown; fields?: readonly string[] }) {
  if (errorCode(error) === 'last_admin') {
    return (
      <Alert severity="error" data-testid="error-alert" data-code="last_admin" sx={{ mb: 2 }}>
        <AlertTitle>Last administrator</AlertTitle>
        {withPeriod((error as Error).message)} Cairn always keeps at least one active administrator.
      </Alert>
    );
  }
  return <ErrorAlert error={error} fields={fields} />;
}

function SelfNote({ show, children }: { show: boolean; children: ReactNode }) {
  if (!show) return null;
  return (
    <Alert severity="warning" variant="outlined" sx={{ mt: 2 }}>
      {children}
    </Alert>
  );
}

function RoleSelect({
  value,
  onChange,
  error,
  helperText,
  autoFocus,
}: {
  value: Role;
  onChange: (r: Role) => void;
  error?: string;
  helperText?: string;
  autoFocus?: boolean;
}) {
  return (
    <TextField
      select
      label="Role"
      name="role"
      fullWidth
      autoFocus={autoFocus}
      value={value}
      onChange={(e) => onChange(e.target.value as Role)}
      error={Boolean(error)}
      helperText={
        error ??
        helperText ??
        (value === 'admin'
          ? 'Administrators manage everything and see every site.'
          : 'Operators work only on the sites assigned to them.')
      }
      slotProps={{ select: { native: true } }}
    >
      <option value="operator">{ROLE_LABEL.operator}</option>
      <option value="admin">{ROLE_LABEL.admin}</option>
    </TextField>
  );
}

export function CreateOperatorDialog({ onClose, onDone }: { onClose: () => void; onDone: Done }) {
  const queryClient = useQueryClient();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [role, setRole] = useState<Role>('operator');
  const [local, setLocal] = useState<Record<string, string | null>>({});

  const mutation = useMutation({
    mutationFn: () => usersApi.create(username.trim(), password, role),
    onSuccess: (created) => {
      void queryClient.invalidateQueries({ queryKey: USERS_QUERY });
      onDone(`Created ${created?.username ?? username.trim()}. They set up their authenticator at their first sign-in.`);
      onClose();
    },
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errors = {
      username: checkUsername(username),
      password: checkSecret(password, 'The password', MAX_PASSWORD),
      confirm: checkConfirmation(password, confirm),
    };
    setLocal(errors);
    if (!errors.username && !errors.password && !errors.confirm) mutation.mutate();
  };

  const clear = (k: string) => setLocal((l) => ({ ...l, [k]: null }));
  const usernameErr = local.username ?? fieldError(mutation.error, 'username');
  const passwordErr = local.password ?? fieldError(mutation.error, 'password');
  const roleErr = fieldError(mutation.error, 'role');
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <form noValidate onSubmit={submit}>
        <DialogTitle>New operator</DialogTitle>
        <DialogContent>
          <ErrorAlert error={mutation.error} fields={['username', 'password', 'role']} />
          <TextField
            label="Username"
            name="username"
            autoFocus
            fullWidth
            value={username}
            onChange={(e) => {
              setUsername(e.target.value);
              clear('username');
            }}
            error={Boolean(usernameErr)}
            helperText={usernameErr ?? '3 to 64 letters, digits or . _ - @; stored in lower case.'}
            slotProps={{ htmlInput: { spellCheck: false, autoCapitalize: 'none', autoComplete: 'off' } }}
            sx={{ mt: 1, mb: 2 }}
          />
          <TextField
            label="Password"
            name="password"
            type="password"
            fullWidth
            value={password}
            onChange={(e) => {
              setPassword(e.target.value);
              clear('password');
            }}
            error={Boolean(passwordErr)}
            helperText={passwordErr ?? `${MIN_SECRET} to ${MAX_PASSWORD} characters. Give it to the operator privately.`}
            slotProps={{ htmlInput: { autoComplete: 'new-password' } }}
            sx={{ mb: 2 }}
          />
          <TextField
            label="Confirm password"
            name="confirm"
            type="password"
            fullWidth
            value={confirm}
            onChange={(e) => {
              setConfirm(e.target.value);
              clear('confirm');
            }}
            error={Boolean(local.confirm)}
            helperText={local.confirm}
            slotProps={{ htmlInput: { autoComplete: 'new-password' } }}
            sx={{ mb: 2 }}
          />
          <RoleSelect value={role} onChange={setRole} error={roleErr} />
          <Typography variant="body2" color="text.secondary" sx={{ mt: 2 }}>
            The account is local and requires MFA: the operator sets up an authenticator app at the first sign-in.
          </Typography>
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={mutation.isPending}>
            {mutation.isPending ? 'Creating…' : 'Create'}
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

export function RoleDialog({ user, self, onClose, onDone }: { user: Operator; self: boolean; onClose: () => void; onDone: Done }) {
  const queryClient = useQueryClient();
  const [role, setRole] = useState<Role>(user.role === 'admin' ? 'admin' : 'operator');
  const mutation = useMutation({
    mutationFn: () => usersApi.setRole(user.username, role),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: USERS_QUERY });
      onDone(`${user.username} is now ${role === 'admin' ? 'an administrator' : 'an operator'}. Their sessions ended.`);
      onClose();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    mutation.mutate();
  };
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <form noValidate onSubmit={submit}>
        <DialogTitle>Change role of {user.username}</DialogTitle>
        <DialogContent>
          <ActionError error={mutation.error} fields={['role']} />
          <Box sx={{ mt: 1 }}>
            <RoleSelect value={role} onChange={setRole} error={fieldError(mutation.error, 'role')} autoFocus />
          </Box>
          <DialogContentText sx={{ fontSize: 14, mt: 2 }}>
            Changing the role ends {self ? 'your' : 'their'} sessions so the new role applies at once.
          </DialogContentText>
          <SelfNote show={self && role !== 'admin'}>
            This is your own account: you will be signed out and lose access to this page.
          </SelfNote>
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button
            type="submit"
            variant="contained"
            disabled={mutation.isPending || role === (user.role === 'admin' ? 'admin' : 'operator')}
          >
            {mutation.isPending ? 'Saving…' : 'Change role'}
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

export function ResetPasswordDialog({ user, self, onClose, onDone }: { user: Operator; self: boolean; onClose: () => void; onDone: Done }) {
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [local, setLocal] = useState<Record<string, string | null>>({});
  const mutation = useMutation({
    mutationFn: () => usersApi.resetPassword(user.username, password),
    onSuccess: (r) => {
      onDone(`Password of ${user.username} reset. Their sessions ended.` + tokensRevokedSentence(r.api_tokens_revoked));
      onClose();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errors = { password: checkSecret(password, 'The password', MAX_PASSWORD), confirm: checkConfirmation(password, confirm) };
    setLocal(errors);
    if (!errors.password && !errors.confirm) mutation.mutate();
  };
  const passwordErr = local.password ?? fieldError(mutation.error, 'password');
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <form noValidate onSubmit={submit}>
        <DialogTitle>Reset password of {user.username}</DialogTitle>
        <DialogContent>
          <ErrorAlert error={mutation.error} fields={['password']} />
          <TextField
            label="Password"
            name="password"
            type="password"
            autoFocus
            fullWidth
            value={password}
            onChange={(e) => {
              setPassword(e.target.value);
              setLocal((l) => ({ ...l, password: null }));
            }}
            error={Boolean(passwordErr)}
            helperText={passwordErr ?? `${MIN_SECRET} to ${MAX_PASSWORD} characters.`}
            slotProps={{ htmlInput: { autoComplete: 'new-password' } }}
            sx={{ mt: 1, mb: 2 }}
          />
          <TextField
            label="Confirm password"
            name="confirm"
            type="password"
            fullWidth
            value={confirm}
            onChange={(e) => {
              setConfirm(e.target.value);
              setLocal((l) => ({ ...l, confirm: null }));
            }}
            error={Boolean(local.confirm)}
            helperText={local.confirm}
            slotProps={{ htmlInput: { autoComplete: 'new-password' } }}
          />
          <DialogContentText sx={{ fontSize: 14, mt: 2 }}>
            Every session of {self ? 'your account' : user.username} ends. The authenticator is kept.
          </DialogContentText>
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={mutation.isPending}>
            {mutation.isPending ? 'Saving…' : 'Reset password'}
          </Button>
        </DialogActions>
      </form>
    </Dialog>
  );
}

const MFA_TEXT: Record<MfaAction, { title: (u: string) => string; body: (u: string) => string; button: string; done: (u: string) => string }> = {
  enable: {
    title: (u) => `Require MFA for ${u}?`,
    body: (u) =>
      `${u} will need a code from an authenticator app at every sign-in. Without a verified authenticator, they set one up at their next sign-in.`,
    button: 'Require MFA',
    done: (u) => `MFA is required for ${u} again.`,
  },
  disable: {
    title: (u) => `Stop requiring MFA for ${u}?`,
    body: (u) =>
      `${u} will sign in with the password alone. Anyone who learns that password gets in. Their authenticator is kept, so requiring MFA again needs no new setup.`,
    button: 'Stop requiring MFA',
    done: (u) => `${u} now signs in with the password alone.`,
  },
  reset: {
    title: (u) => `Reset the authenticator of ${u}?`,
    body: (u) =>
      `The authenticator of ${u} is cleared. At their next sign-in they set up a new authenticator app with a new QR code. Use this when a phone is lost or replaced.`,
    button: 'Reset authenticator',
    done: (u) => `Authenticator of ${u} cleared. They set up a new one at their next sign-in.`,
  },
};

export function MfaDialog({ user, action, onClose, onDone }: { user: Operator; action: MfaAction; onClose: () => void; onDone: Done }) {
  const queryClient = useQueryClient();
  const text = MFA_TEXT[action];
  const mutation = useMutation({
    mutationFn: () => usersApi.mfa(user.username, action),
    onSuccess: (r) => {
      void queryClient.invalidateQueries({ queryKey: USERS_QUERY });
      onDone(text.done(user.username) + (action === 'reset' ? tokensRevokedSentence(r.api_tokens_revoked) : ''));
      onClose();
    },
  });
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <DialogTitle>{text.title(user.username)}</DialogTitle>
      <DialogContent>
        <ErrorAlert error={mutation.error} />
        <DialogContentText sx={{ fontSize: 14 }}>{text.body(user.username)}</DialogContentText>
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} disabled={mutation.isPending}>
          Cancel
        </Button>
        <Button
          variant="contained"
          color={action === 'enable' ? 'primary' : 'warning'}
          onClick={() => mutation.mutate()}
          disabled={mutation.isPending}
        >
          {mutation.isPending ? 'Saving…' : text.button}
        </Button>
      </DialogActions>
    </Dialog>
  );
}

export function DeleteOperatorDialog({ user, self, onClose, onDone }: { user: Operator; self: boolean; onClose: () => void; onDone: Done }) {
  const queryClient = useQueryClient();
  const mutation = useMutation({
    mutationFn: () => usersApi.remove(user.username),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: USERS_QUERY });
      onDone(`Deleted ${user.username}.`);
      onClose();
    },
  });
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <DialogTitle>Delete {user.username}?</DialogTitle>
      <DialogContent>
        <ActionError error={mutation.error} />
        <DialogContentText sx={{ fontSize: 14 }}>
          The account, its authenticator, passkeys and site assignments are removed and its sessions end at once. The
          audit trail keeps what it did. This cannot be undone.
        </DialogContentText>
        <SelfNote show={self}>This is your own account: you will be signed out.</SelfNote>
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} disabled={mutation.isPending}>
          Cancel
        </Button>
        <Button color="error" variant="contained" onClick={() => mutation.mutate()} disabled={mutation.isPending}>
          {mutation.isPending ? 'Deleting…' : 'Delete'}
        </Button>
      </DialogActions>
    </Dialog>
  );
}

type Tick = 'on' | 'off' | 'some';

/**
 * Site assignments of one or several operators. Saving replaces them: every
 * operator gets exactly the ticked sites. A site only some of several
 * operators have starts half-ticked and is dropped unless it is ticked.
 */
export function SiteAssignmentDialog({ operators, onClose, onDone }: { operators: Operator[]; onClose: () => void; onDone: Done }) {
  const queryClient = useQueryClient();
  const usernames = useMemo(() => operators.map((o) => o.username), [operators]);
  const sitesQuery = useQuery({ queryKey: SITES_QUERY, queryFn: sitesApi.list });
  const selection = useQuery({
    queryKey: [ASSIGNMENTS_QUERY, ...usernames],
    queryFn: () => siteAssignments.selection(usernames),
    staleTime: 0,
    gcTime: 0,
  });
  const [ticks, setTicks] = useState<Record<number, Tick> | null>(null);
  const [filter, setFilter] = useState('');

  // Start from the Engine's selection once it arrives.
  const initial = useMemo<Record<number, Tick> | null>(() => {
    if (!selection.data) return null;
    const counts = new Map<number, number>();
    for (const u of usernames) for (const id of selection.data.assignments?.[u] ?? []) counts.set(id, (counts.get(id) ?? 0) + 1);
    const t: Record<number, Tick> = {};
    for (const [id, n] of counts) t[id] = n === usernames.length ? 'on' : 'some';
    return t;
  }, [selection.data, usernames]);
  const current = ticks ?? initial ?? {};

  const mutation = useMutation({
    mutationFn: () =>
      siteAssignments.assign(
        usernames,
        Object.entries(current)
          .filter(([, v]) => v === 'on')
          .map(([k]) => Number(k))
          .sort((a, b) => a - b),
      ),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: USERS_QUERY });
      const n = Object.values(current).filter((v) => v === 'on').length;
      onDone(
        `${usernames.length === 1 ? usernames[0] : `${usernames.length} operators`}: ${n} site${n === 1 ? '' : 's'} assigned.`,
      );
      onClose();
    },
  });

  const allSites = [...(sitesQuery.data ?? [])].sort((a, b) => a.name.localeCompare(b.name));
  const shown = filter ? allSites.filter((s) => s.name.toLowerCase().includes(filter.toLowerCase())) : allSites;
  const set = (id: number, v: Tick) => setTicks({ ...current, [id]: v });
  const admins = operators.filter((o) => o.role === 'admin');
  const loading = sitesQuery.isPending || selection.isPending;
  const title = usernames.length === 1 ? `Sites of ${usernames[0]}` : `Sites of ${usernames.length} operators`;
  const hasSome = Object.values(current).includes('some');

  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="sm">
      <DialogTitle>{title}</DialogTitle>
      <DialogContent>
        <ErrorAlert error={mutation.error ?? sitesQuery.error ?? selection.error} />
        {usernames.length > 1 && (
          <Typography variant="body2" sx={{ mb: 1 }}>
            {usernames.join(', ')}
          </Typography>
        )}
        <DialogContentText sx={{ fontSize: 14, mb: 1 }}>
          An operator sees only the sites assigned to them and those sites’ devices. Saving gives{' '}
          {usernames.length === 1 ? 'the operator' : 'every operator listed'} exactly the ticked sites.
          {hasSome && ' A half-ticked site is assigned to only some of them and is removed from all unless you tick it.'}
        </DialogContentText>
        {admins.length > 0 && (
          <Alert severity="info" variant="outlined" sx={{ mb: 1 }}>
            {admins.map((a) => a.username).join(', ')} {admins.length === 1 ? 'is an administrator and sees' : 'are administrators and see'}{' '}
            every site; assignments apply only as an operator.
          </Alert>
        )}
        {loading ? (
          <Box sx={{ display: 'flex', alignItems: 'center', gap: 1, py: 2 }} role="status">
            <CircularProgress size={18} /> Loading sites…
          </Box>
        ) : allSites.length === 0 ? (
          <Typography variant="body2" color="text.secondary" sx={{ py: 2 }}>
            There are no sites yet. Create one on the Sites page first.
          </Typography>
        ) : (
          <>
            <Box sx={{ display: 'flex', alignItems: 'center', gap: 1, mb: 1 }}>
              {allSites.length > 8 && (
                <TextField
                  label="Filter sites"
                  size="small"
                  value={filter}
                  onChange={(e) => setFilter(e.target.value)}
                  sx={{ flex: 1 }}
                />
              )}
              <Box sx={{ flex: allSites.length > 8 ? 0 : 1 }} />
              <Button size="small" onClick={() => setTicks(Object.fromEntries(allSites.map((s) => [s.site_id, 'on' as Tick])))}>
                Select all
              </Button>
              <Button size="small" onClick={() => setTicks({})}>
                Clear
              </Button>
            </Box>
            <Box
              role="group"
              aria-label="Sites"
              sx={{ maxHeight: 320, overflowY: 'auto', border: 1, borderColor: 'divider', borderRadius: 1, px: 1.5, py: 0.5 }}
            >
              {shown.map((s) => {
                const t = current[s.site_id] ?? 'off';
                return (
                  <FormControlLabel
                    key={s.site_id}
                    sx={{ display: 'flex', m: 0 }}
                    control={
                      <Checkbox
                        size="small"
                        checked={t === 'on'}
                        indeterminate={t === 'some'}
                        onChange={() => set(s.site_id, t === 'on' ? 'off' : 'on')}
                        slotProps={{ input: { 'aria-label': s.name } }}
                      />
                    }
                    label={
                      <Typography variant="body2">
                        {s.name}{' '}
                        <Typography component="span" variant="caption" color="text.secondary">
                          {s.site_worker_slug}
                        </Typography>
                      </Typography>
                    }
                  />
                );
              })}
              {shown.length === 0 && (
                <Typography variant="body2" color="text.secondary" sx={{ py: 1 }}>
                  No site matches.
                </Typography>
              )}
            </Box>
          </>
        )}
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} disabled={mutation.isPending}>
          Cancel
        </Button>
        <Button variant="contained" onClick={() => mutation.mutate()} disabled={mutation.isPending || loading || !selection.data}>
          {mutation.isPending ? 'Saving…' : 'Save'}
        </Button>
      </DialogActions>
    </Dialog>
  );
}
