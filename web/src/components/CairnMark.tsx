/** Cairn's mark: three stacked stones. */
export function CairnMark({ size = 28, inverted = false }: { size?: number; inverted?: boolean }) {
  return (
    <svg width={size} height={size} viewBox="0 0 32 32" aria-hidden="true" focusable="false">
      <rect width="32" height="32" rx="6" fill={inverted ? '#ffffff' : '#0f766e'} fillOpacity={inverted ? 0.12 : 1} />
      <ellipse cx="16" cy="24" rx="10" ry="3.5" fill="#e2e8f0" />
      <ellipse cx="16" cy="17.5" rx="7.5" ry="3" fill="#cbd5e1" />
      <ellipse cx="16" cy="11.5" rx="5" ry="2.6" fill="#f8fafc" />
    </svg>
  );
}
