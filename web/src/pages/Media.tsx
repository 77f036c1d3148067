import { useRef, useState, type DragEvent, type FormEvent } from 'react';
import { gql, messageOf } from '../api/graphql';
import { upload, type UploadHandle } from '../api/upload';
import {
  DeleteMediaDocument,
  MediaListDocument,
  UpdateMediaTagsDocument,
  type MediaItemFragment,
  type MediaType,
} from '../generated/graphql';
import { bytes, ErrorNote, Loading, parseTags, when } from '../ui/common';
import { useTaggedPages } from '../ui/useTaggedPages';
import { RunOverMedia } from './Batches';

/** How long a finished upload's row stays (its file is in the list below by then). */
const DONE_ROW_MS = 4000;
const PREVIEW_WIDTH = 256;
const KINDS: [MediaType | '', string][] = [
  ['', 'All files'],
  ['SOURCE_ASSET', 'Uploads'],
  ['TARGET_ASSET', 'Job results'],
];

interface Upload {
  key: number;
  name: string;
  sent: number;
  total: number;
  state: 'sending' | 'done' | 'failed' | 'canceled';
  message?: string;
  handle: UploadHandle;
}

/** The user's files: upload (pick or drop) with progress and cancel, filter by tags, edit tags, delete. */
export function MediaPage() {
  // Uploads (source assets), job results (target assets), or both.
  const [kind, setKind] = useState<MediaType | ''>('');
  const kindRef = useRef<MediaType | ''>('');
  const {
    tagsParam,
    text: filterText,
    setText: setFilterText,
    items,
    setItems,
    next,
    load,
    error,
    setError,
    search: filter,
  } = useTaggedPages('/files', async (tags, after) => {
    const filter = {
      ...(tags.length ? { tags } : {}),
      ...(kindRef.current ? { type: kindRef.current } : {}),
    };
    return (await gql(MediaListDocument, { first: 50, after, filter })).media;
  });
  const [uploads, setUploads] = useState<Upload[]>([]);
  // Media picked for a batch; with none picked, a tag filter selects (every file with its tags).
  const [picked, setPicked] = useState<string[]>([]);
  const [uploadTags, setUploadTags] = useState('');
  const [dragging, setDragging] = useState(false);
  const counter = useRef(0);

  const change = (key: number, patch: Partial<Upload>) =>
    setUploads((old) => old.map((u) => (u.key === key ? { ...u, ...patch } : u)));

  const start = (files: FileList | File[]) => {
    const tags = parseTags(uploadTags);
    for (const file of Array.from(files)) {
      const key = ++counter.current;
      const handle = upload(file, tags, (sent, total) => change(key, { sent, total }));
      setUploads((old) => [
        { key, name: file.name, sent: 0, total: file.size, state: 'sending', handle },
        ...old,
      ]);
      handle.done.then(
        () => {
          change(key, { state: 'done' });
          void load(null);
          // The file is in the list now: its upload row says "done" for a moment, then goes.
          window.setTimeout(() => setUploads((old) => old.filter((u) => u.key !== key)), DONE_ROW_MS);
        },
        (err: unknown) =>
          change(
            key,
            (err as Error).name === 'AbortError'
              ? { state: 'canceled' }
              : { state: 'failed', message: messageOf(err) },
          ),
      );
    }
  };

  const drop = (e: DragEvent) => {
    e.preventDefault();
    setDragging(false);
    if (e.dataTransfer.files.length) start(e.dataTransfer.files);
  };

  return (
    <section aria-labelledby="media-title">
      <h1 id="media-title">Media</h1>
      <div
        className={`dropzone${dragging ? ' dragging' : ''}`}
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={drop}
        data-testid="dropzone"
      >
        <p>Drop files here, or pick them:</p>
        <input
          type="file"
          multiple
          aria-label="Files to upload"
          onChange={(e) => {
            if (e.target.files?.length) start(e.target.files);
            e.target.value = '';
          }}
        />
        <label className="inline-label">
          Tags for new uploads{' '}
          <input
            value={uploadTags}
            onChange={(e) => setUploadTags(e.target.value)}
            placeholder="holiday, raw"
          />
        </label>
      </div>
      {uploads.length ? (
        <ul className="uploads" aria-label="Uploads">
          {uploads.map((u) => (
            <li key={u.key} aria-label={`Upload of ${u.name}`}>
              <span className="upload-name">{u.name}</span>
              <progress value={u.sent} max={u.total || 1} aria-label={`Progress of ${u.name}`} />
              <span className="upload-state">
                {u.state === 'sending'
                  ? `${Math.round((u.sent / (u.total || 1)) * 100)}%`
                  : u.state === 'failed'
                    ? `failed: ${u.message}`
                    : u.state}
              </span>
              {u.state === 'sending' ? (
                <button type="button" onClick={() => u.handle.cancel()}>
                  Cancel upload
                </button>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}

      <div className="media-kinds" role="group" aria-label="Show">
        {KINDS.map(([value, label]) => (
          <button
            key={label}
            type="button"
            aria-pressed={kind === value}
            onClick={() => {
              kindRef.current = value;
              setKind(value);
              void load(null);
            }}
          >
            {label}
          </button>
        ))}
      </div>
      <form className="inline-form" role="search" onSubmit={filter}>
        <label htmlFor="media-tags">Filter by tags</label>
        <input
          id="media-tags"
          value={filterText}
          onChange={(e) => setFilterText(e.target.value)}
          autoComplete="off"
        />
        <button type="submit">Filter</button>
      </form>
      <ErrorNote>{error}</ErrorNote>
      {items === null ? (
        <Loading what="your media" />
      ) : items.length === 0 ? (
        <p className="empty">
          {tagsParam
            ? 'No file carries these tags.'
            : kind === 'TARGET_ASSET'
              ? 'No job results yet.'
              : 'No files yet: upload one above.'}
        </p>
      ) : (
        <>
          <RunOverMedia
            mediaIds={picked}
            tags={tagsParam ? parseTags(tagsParam) : []}
            count={picked.length || (tagsParam ? items.length : 0)}
          />
          <ul className="media-grid" aria-label="Your media">
            {items.map((m) => (
              <MediaCard
                key={m.id}
                item={m}
                picked={picked.includes(m.id)}
                onPick={(on) => setPicked((old) => (on ? [...old, m.id] : old.filter((id) => id !== m.id)))}
                onChange={(n) => setItems((old) => old?.map((o) => (o.id === n.id ? n : o)) ?? old)}
                onDeleted={() => setItems((old) => old?.filter((o) => o.id !== m.id) ?? old)}
                onError={setError}
              />
            ))}
          </ul>
        </>
      )}
      {next ? (
        <button type="button" onClick={() => void load(next)}>
          More files
        </button>
      ) : null}
    </section>
  );
}

function MediaCard({
  item: m,
  picked,
  onPick,
  onChange,
  onDeleted,
  onError,
}: {
  item: MediaItemFragment;
  picked: boolean;
  onPick: (on: boolean) => void;
  onChange: (m: MediaItemFragment) => void;
  onDeleted: () => void;
  onError: (message: string) => void;
}) {
  const [tags, setTags] = useState(m.tags.join(', '));
  const [confirming, setConfirming] = useState(false);
  const save = async (e: FormEvent) => {
    e.preventDefault();
    try {
      onChange((await gql(UpdateMediaTagsDocument, { id: m.id, tags: parseTags(tags) })).updateMediaTags);
    } catch (err) {
      onError(messageOf(err));
    }
  };
  const remove = async () => {
    try {
      await gql(DeleteMediaDocument, { id: m.id });
      onDeleted();
    } catch (err) {
      onError(messageOf(err));
    }
  };
  return (
    <li className="media-card" aria-label={m.imageName}>
      {m.contentType.startsWith('image/') ? (
        // A 256-pixel preview, not the original (docs/media.md, "Previews").
        <img
          src={`${m.url}?w=${PREVIEW_WIDTH}`}
          alt={`Preview of ${m.imageName}`}
          loading="lazy"
          width={160}
          height={120}
        />
      ) : (
        <div className="file-icon" aria-hidden="true">
          {m.contentType.split('/')[1] ?? 'file'}
        </div>
      )}
      <label className="media-pick">
        <input type="checkbox" checked={picked} onChange={(e) => onPick(e.target.checked)} /> Select{' '}
        <span className="visually-hidden">{m.imageName}</span>
      </label>
      <p className="media-name">
        <a href={m.url} download={m.imageName}>
          {m.imageName || m.id}
        </a>
      </p>
      <p className="muted small">
        {bytes(m.size)} · {m.type === 'TARGET_ASSET' ? 'job result' : 'uploaded'} · {when(m.createdAt)}
      </p>
      <form className="tag-form" onSubmit={save}>
        <input aria-label={`Tags of ${m.imageName}`} value={tags} onChange={(e) => setTags(e.target.value)} />
        <button type="submit">Save tags</button>
      </form>
      {confirming ? (
        <div className="actions">
          <button type="button" className="danger" onClick={() => void remove()}>
            Delete for good
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Keep
          </button>
        </div>
      ) : (
        <button type="button" onClick={() => setConfirming(true)}>
          Delete
        </button>
      )}
    </li>
  );
}
