import { useEffect, useRef, useState, type ReactNode } from 'react';

/**
 * Renders only the rows in view (plus a margin): a list of thousands of jobs keeps a few dozen
 * elements in the page, so events that change rows cost the same whatever the list's length.
 */
export function VirtualList<T>({
  items,
  rowHeight,
  height,
  render,
  keyOf,
  label,
  onEnd,
}: {
  items: T[];
  rowHeight: number;
  height: number;
  render: (item: T, index: number) => ReactNode;
  keyOf: (item: T) => string;
  label: string;
  /** Called when the last rows come into view (load the next page). */
  onEnd?: () => void;
}) {
  const ref = useRef<HTMLDivElement>(null);
  const [top, setTop] = useState(0);
  const overscan = 8;
  const first = Math.max(0, Math.floor(top / rowHeight) - overscan);
  const last = Math.min(items.length, Math.ceil((top + height) / rowHeight) + overscan);
  useEffect(() => {
    if (onEnd && last >= items.length && items.length > 0) onEnd();
  }, [last, items.length, onEnd]);
  return (
    <div
      ref={ref}
      className="virtual"
      style={{ maxHeight: height }}
      role="list"
      aria-label={label}
      onScroll={(e) => setTop(e.currentTarget.scrollTop)}
    >
      <div style={{ height: items.length * rowHeight, position: 'relative' }}>
        {items.slice(first, last).map((item, i) => (
          <div
            key={keyOf(item)}
            role="listitem"
            className="virtual-row"
            style={{
              position: 'absolute',
              top: (first + i) * rowHeight,
              height: rowHeight,
              left: 0,
              right: 0,
            }}
          >
            {render(item, first + i)}
          </div>
        ))}
      </div>
    </div>
  );
}
