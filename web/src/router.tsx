import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';

/** A small history router: the service answers every app path with the same page. */
const NAVIGATE = 'app:navigate';

function subscribe(f: () => void) {
  window.addEventListener('popstate', f);
  window.addEventListener(NAVIGATE, f);
  return () => {
    window.removeEventListener('popstate', f);
    window.removeEventListener(NAVIGATE, f);
  };
}

export function usePath(): string {
  return useSyncExternalStore(subscribe, () => location.pathname);
}

export function useQuery(): URLSearchParams {
  const search = useSyncExternalStore(subscribe, () => location.search);
  return new URLSearchParams(search);
}

export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  window.dispatchEvent(new Event(NAVIGATE));
  window.scrollTo(0, 0);
}

export function Link({ href, onClick, ...rest }: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  const click = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return <a href={href} onClick={click} {...rest} />;
}
