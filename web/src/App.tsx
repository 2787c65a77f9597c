import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { QueryClient, useQuery, useQueryClient } from '@tanstack/react-query';
import { Navigate, Route, Routes, useNavigate } from 'react-router';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import CircularProgress from '@mui/material/CircularProgress';
import { ApiError, onSessionProblem } from './api/client';
import { auth, bootstrap } from './api/endpoints';
import type { ForceResetResult, User } from './api/types';
import { AuthShell } from './auth/AuthShell';
import { BOOTSTRAP_QUERY, BootstrapFlow, type WizardKind } from './auth/BootstrapFlow';
import { CipherResetCodes } from './auth/CipherResetCodes';
import { LoginPage } from './auth/LoginPage';
import { SudoGate } from './auth/SudoGate';
import { ME_QUERY, SessionContext, type Session } from './auth/session';
import { describeError } from './components/errors';
import { AppFrame } from './layout/AppFrame';
import { NotFoundPage } from './pages/ComingSoonPages';
import PatchesPage from './pages/patches/PatchesPage';
import { INCIDENTS_QUERY } from './pages/alerts/queries';
import { invalidateForDeviceEvent } from './pages/devices/queries';
import { ProfilePage } from './pages/ProfilePage';
import { ToastContext } from './toasts/notify';
import { ToastStack, useToastStack } from './toasts/ToastStack';
import { useOperatorEvents } from './toasts/useOperatorEvents';

// The grid pages pull in AG Grid; load them when first opened.
const SitesPage = lazy(() => import('./pages/SitesPage'));
const ServerPage = lazy(() => import('./pages/ServerPage'));
const AccessPage = lazy(() => import('./pages/access/AccessPage'));
const DevicesPage = lazy(() => import('./pages/devices/DevicesPage'));
const DevicePage = lazy(() => import('./pages/devices/DevicePage'));
const AutomationPage = lazy(() => import('./pages/automation/AutomationPage'));
const SoftwarePage = lazy(() => import('./pages/software/SoftwarePage'));
const MetadataFieldsPage = lazy(() => import('./pages/metadata/MetadataFieldsPage'));
const AlertsPage = lazy(() => import('./pages/alerts/AlertsPage'));
const ChannelsPage = lazy(() => import('./pages/alerts/ChannelsPage'));
const WatchdogsPage = lazy(() => import('./pages/alerts/WatchdogsPage'));

/**
 * Drops everything read with the old session. The session query itself is
 * set to null rather than removed: App observes it, and an observer of a
 * removed query would not see the change.
 */
function forgetSession(queryClient: QueryClient) {
  queryClient.removeQueries({ predicate: (q) => q.queryKey[0] !== BOOTSTRAP_QUERY[0] && q.queryKey[0] !== ME_QUERY[0] });
  queryClient.setQueryData(ME_QUERY, null);
}

function Loading({ label }: { label: string }) {
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', justifyContent: 'center', minHeight: '40vh', gap: 1.5 }} role="status">
      <CircularProgress size={22} />
      <span>{label}</span>
    </Box>
  );
}

function EngineError({ error, retry }: { error: unknown; retry: () => void }) {
  const unreachable = !(error instanceof ApiError) || error.status === 0 || error.status === 502 || error.status === 504;
  return (
    <AuthShell title={unreachable ? 'Cannot reach the Engine' : 'The Engine reported an error'}>
      <Alert severity="error" sx={{ mb: 2 }}>
        {describeError(error)}
      </Alert>
      <Button variant="contained" onClick={retry}>
        Try again
      </Button>
    </AuthShell>
  );
}

/** Routes by bootstrap phase, then by session: wizard, unlock, sign-in or the console. */
export function App() {
  const queryClient = useQueryClient();
  const [wizard, setWizard] = useState<WizardKind | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  // A forced cipher reset's codes: on screen until the administrator says
  // they are saved; the setup code then fills the wizard's first step.
  const [reset, setReset] = useState<ForceResetResult | null>(null);
  const [presetSetupCode, setPresetSetupCode] = useState<string | null>(null);

  const phaseQuery = useQuery({ queryKey: BOOTSTRAP_QUERY, queryFn: bootstrap.state, refetchOnWindowFocus: false });
  const phase = phaseQuery.data?.phase;

  const meQuery = useQuery({
    queryKey: ME_QUERY,
    queryFn: auth.meOrNull,
    enabled: phase === 'login_required',
    retry: false,
    staleTime: 60_000,
  });
  const user = phase === 'login_required' ? meQuery.data : undefined;
  const userRef = useRef(user);
  userRef.current = user;

  useEffect(() => {
    if (phase === 'admin_recovery_required') setWizard('recovery');
    else if (phase === 'aegis_setup_required' || phase === 'admin_setup_required') setWizard((w) => w ?? 'setup');
    else if (phase && phase !== 'login_required') setWizard(null);
    // A new phase (for example after unlocking) means the session must be read again.
    if (phase && phase !== 'login_required') void queryClient.invalidateQueries({ queryKey: ME_QUERY });
  }, [phase, queryClient]);

  useEffect(
    () =>
      onSessionProblem((reason) => {
        if (reason === 'locked') {
          void queryClient.invalidateQueries({ queryKey: BOOTSTRAP_QUERY });
          return;
        }
        if (userRef.current) setNotice('Your session ended. Sign in again.');
        forgetSession(queryClient);
      }),
    [queryClient],
  );

  const signedIn = useCallback(
    (u: User) => {
      setNotice(null);
      setWizard(null);
      queryClient.setQueryData(ME_QUERY, u);
    },
    [queryClient],
  );

  const cipherReset = useCallback(
    (r: ForceResetResult) => {
      setReset(r);
      setPresetSetupCode(r.setup_code);
      setWizard('recovery');
      forgetSession(queryClient);
      queryClient.setQueryData(BOOTSTRAP_QUERY, { phase: r.phase });
    },
    [queryClient],
  );

  if (reset) {
    return (
      <CipherResetCodes
        result={reset}
        onContinue={() => {
          setReset(null);
          void queryClient.invalidateQueries({ queryKey: BOOTSTRAP_QUERY });
        }}
      />
    );
  }
  if (phaseQuery.isPending) return <Loading label="Connecting to the Engine…" />;
  if (phaseQuery.isError) return <EngineError error={phaseQuery.error} retry={() => void phaseQuery.refetch()} />;
  const current = phaseQuery.data.phase;
  if (current !== 'login_required')
    return <BootstrapFlow phase={current} kind={wizard ?? 'setup'} initialSetupCode={presetSetupCode} />;

  if (meQuery.isPending) return <Loading label="Checking your session…" />;
  if (meQuery.isError) return <EngineError error={meQuery.error} retry={() => void meQuery.refetch()} />;
  if (!user) return <LoginPage onSignedIn={signedIn} notice={notice} afterWizard={wizard} />;
  return <Console user={user} cipherReset={cipherReset} />;
}

function Console({ user, cipherReset }: { user: User; cipherReset: (r: ForceResetResult) => void }) {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const { toasts, push, dismiss } = useToastStack();
  // When the stream gives up, check the session: a 401 there returns to sign-in.
  const checkSession = useCallback(() => void queryClient.invalidateQueries({ queryKey: ME_QUERY }), [queryClient]);
  // Device events mark the matching lists and device pages stale, so what is on screen refetches.
  // Watchdog events refresh the alert queue too.
  const onDeviceEvent = useCallback(
    (name: string, data: unknown) => {
      if (name === 'watchdog_incidents_changed' || name === 'device_watchdogs_changed') {
        void queryClient.invalidateQueries({ queryKey: INCIDENTS_QUERY });
      }
      invalidateForDeviceEvent(queryClient, data);
    },
    [queryClient],
  );
  const streamStatus = useOperatorEvents(user.username, push, checkSession, onDeviceEvent);

  const session = useMemo<Session>(
    () => ({
      user,
      cipherReset,
      signOut: async () => {
        try {
          await auth.logout();
        } finally {
          forgetSession(queryClient);
          navigate('/', { replace: true });
        }
      },
    }),
    [user, cipherReset, queryClient, navigate],
  );

  return (
    <SessionContext.Provider value={session}>
      <ToastContext.Provider value={push}>
        <AppFrame streamStatus={streamStatus}>
          <Suspense fallback={<Loading label="Loading…" />}>
            <Routes>
              <Route path="/" element={<Navigate to="/sites" replace />} />
              <Route path="/devices" element={<DevicesPage />} />
              <Route path="/devices/:hostname/:tab?" element={<DevicePage />} />
              <Route path="/software" element={<SoftwarePage />} />
              <Route path="/metadata" element={<MetadataFieldsPage />} />
              <Route path="/sites" element={<SitesPage />} />
              <Route path="/alerts" element={<AlertsPage />} />
              <Route path="/alerts/channels" element={<ChannelsPage />} />
              <Route path="/alerts/watchdogs" element={<WatchdogsPage />} />
              <Route path="/patches" element={<PatchesPage />} />
              <Route path="/automation/:tab?" element={<AutomationPage />} />
              <Route path="/access/:tab?" element={<AccessPage />} />
              <Route path="/server" element={<ServerPage />} />
              <Route path="/profile" element={<ProfilePage />} />
              <Route path="*" element={<NotFoundPage />} />
            </Routes>
          </Suspense>
        </AppFrame>
      </ToastContext.Provider>
      <ToastStack toasts={toasts} onDismiss={dismiss} />
      <SudoGate offerPasskey={user.passkey_count > 0} />
    </SessionContext.Provider>
  );
}
