/** Stacked daily bars (compute, storage) as SVG: no chart library for one chart. */
export function BarChart({
  bars,
  currency,
}: {
  bars: { label: string; compute: number; storage: number }[];
  currency: string;
}) {
  const max = Math.max(...bars.map((b) => b.compute + b.storage), 0) || 1;
  const w = 12;
  const gap = 4;
  const h = 160;
  const width = bars.length * (w + gap);
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${width} ${h + 20}`} role="img" aria-label={`Daily cost in ${currency}`}>
        {bars.map((b, i) => {
          const c = (b.compute / max) * h;
          const s = (b.storage / max) * h;
          return (
            <g key={b.label} transform={`translate(${i * (w + gap)},0)`}>
              <title>{`${b.label}: compute ${b.compute.toFixed(2)}, storage ${b.storage.toFixed(2)} ${currency}`}</title>
              <rect className="bar-compute" x={0} y={h - c} width={w} height={c} />
              <rect className="bar-storage" x={0} y={h - c - s} width={w} height={s} />
              {i % 5 === 0 ? (
                <text x={w / 2} y={h + 14} textAnchor="middle" className="axis">
                  {b.label.slice(8, 10)}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <span className="key key-compute" /> compute <span className="key key-storage" /> storage
      </figcaption>
    </figure>
  );
}
