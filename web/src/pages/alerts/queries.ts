/** Every query of the alert queue; watchdog events invalidate it (App.tsx). */
export const INCIDENTS_QUERY = ['watchdog-incidents'] as const;
