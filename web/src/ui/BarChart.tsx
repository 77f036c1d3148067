/** Stacked daily bars (up to two series) as SVG: no chart library for one chart. */
export function BarChart({
  bars,
  unit,
  keys,
  format,
}: {
  bars: { label: string; values: number[] }[];
  /** What the bars measure, for the chart's label ("EUR", "machine-seconds"). */
  unit: string;
  /** The series' names, in the order of `values`. */
  keys: string[];
  format: (n: number) => string;
}) {
  const max = Math.max(...bars.map((b) => b.values.reduce((a, v) => a + v, 0)), 0);
  if (max === 0)
    return (
      <figure className="chart chart-empty">
        <p>Nothing to chart yet this month.</p>
      </figure>
    );
  const w = 12;
  const gap = 4;
  const h = 160;
  // Room on the left for the scale, on the right for the last day's label.
  const left = 44;
  const width = left + bars.length * (w + gap) + 8;
  const last = bars.length - 1;
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${width} ${h + 22}`} role="img" aria-label={`Daily ${unit}`}>
        <text x={left - 6} y={10} textAnchor="end" className="axis">
          {format(max)}
        </text>
        <text x={left - 6} y={h} textAnchor="end" className="axis">
          0
        </text>
        <line x1={left - 2} x2={width} y1={h + 0.5} y2={h + 0.5} className="baseline" />
        {bars.map((b, i) => {
          let y = h;
          return (
            <g key={b.label} transform={`translate(${left + i * (w + gap)},0)`}>
              <title>{`${b.label}: ${b.values.map((v, k) => `${keys[k]} ${format(v)}`).join(', ')} ${unit}`}</title>
              {b.values.map((v, k) => {
                const size = (v / max) * h;
                y -= size;
                return <rect key={keys[k]} className={`bar-${k}`} x={0} y={y} width={w} height={size} />;
              })}
              {i % 5 === 0 || i === last ? (
                <text x={w / 2} y={h + 16} textAnchor="middle" className="axis">
                  {b.label.slice(8, 10)}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
      <figcaption>
        {keys.map((k, i) => (
          <span key={k}>
            <span className={`key key-${i}`} /> {k}{' '}
          </span>
        ))}
        <span className="muted">({unit} per day, UTC)</span>
      </figcaption>
    </figure>
  );
}
