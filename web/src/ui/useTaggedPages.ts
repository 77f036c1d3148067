import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react';
import { messageOf } from '../api/graphql';
import { navigate, useQuery } from '../router';
import { parseTags } from './common';

export interface Connection<T> {
  nodes: T[];
  pageInfo: { endCursor: string | null; hasNextPage: boolean };
}

/**
 * A list filtered by the page's `?tags=a,b` and paged with a "more" button: the catalogue and the
 * media view. `fetchPage` reads one page for the tags; `search` puts the typed tags in the URL.
 */
export function useTaggedPages<T>(
  path: string,
  fetchPage: (tags: string[], after: string | null) => Promise<Connection<T>>,
) {
  const tagsParam = useQuery().get('tags') ?? '';
  const [text, setText] = useState(tagsParam);
  const [items, setItems] = useState<T[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState('');
  const fetchRef = useRef(fetchPage);
  fetchRef.current = fetchPage;

  const load = useCallback(
    async (after: string | null) => {
      try {
        const conn = await fetchRef.current(parseTags(tagsParam), after);
        setItems((old) => (after && old ? [...old, ...conn.nodes] : conn.nodes));
        setNext(conn.pageInfo.hasNextPage ? conn.pageInfo.endCursor : null);
        setError('');
      } catch (err) {
        setError(messageOf(err));
      }
    },
    [tagsParam],
  );

  useEffect(() => {
    setText(tagsParam);
    void load(null);
  }, [load, tagsParam]);

  const search = (e: FormEvent) => {
    e.preventDefault();
    const tags = parseTags(text).join(',');
    navigate(tags ? `${path}?tags=${encodeURIComponent(tags)}` : path);
  };

  return { tagsParam, text, setText, items, setItems, next, load, error, setError, search };
}
