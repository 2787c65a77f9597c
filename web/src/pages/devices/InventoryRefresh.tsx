// Refresh buttons for the collections the agent otherwise sends on its own
// schedule: the agent collects now, the Engine stores the result, and the
// details are refetched.
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { devices as devicesApi } from '../../api/endpoints';
import { formatDateTime } from '../../components/format';
import { useNotify } from '../../toasts/notify';
import { operationErrorToast } from './operationErrors';
import { RefreshButton } from './parts';
import { deviceDetailsKey } from './queries';

const KINDS = {
  software: {
    run: (hostname: string) =>
      devicesApi.refreshSoftware(hostname).then((r) => ({ count: r?.software_count, at: r?.collected_at })),
    title: 'Software inventory refreshed',
    noun: (n: number) => (n === 1 ? 'package' : 'packages'),
    label: 'Refresh software',
  },
  patches: {
    run: (hostname: string) =>
      devicesApi.refreshPatches(hostname).then((r) => ({ count: r?.patch_count, at: r?.collected_at })),
    title: 'Patch inventory refreshed',
    noun: (n: number) => (n === 1 ? 'patch' : 'patches'),
    label: 'Refresh patches',
  },
} as const;

export function InventoryRefreshButton({ hostname, kind }: { hostname: string; kind: keyof typeof KINDS }) {
  const queryClient = useQueryClient();
  const notify = useNotify();
  const k = KINDS[kind];
  const mutation = useMutation({
    mutationFn: () => k.run(hostname),
    onSuccess: ({ count, at }) => {
      void queryClient.invalidateQueries({ queryKey: deviceDetailsKey(hostname) });
      const what = typeof count === 'number' ? `${count} ${k.noun(count)} on ${hostname}` : hostname;
      notify({ title: k.title, message: at ? `${what}, collected ${formatDateTime(at)}.` : `${what}.`, icon: 'device' });
    },
    onError: (error) => notify(operationErrorToast(error, k.label)),
  });
  return <RefreshButton label={k.label} pending={mutation.isPending} onClick={() => mutation.mutate()} />;
}
