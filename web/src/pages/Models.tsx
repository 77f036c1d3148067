import { gql, messageOf } from '../api/graphql';
import {
  FollowModelDocument,
  LikeModelDocument,
  ModelListDocument,
  UnfollowModelDocument,
  UnlikeModelDocument,
  type ModelCardFragment,
} from '../generated/graphql';
import { Link } from '../router';
import { ErrorNote, Loading } from '../ui/common';
import { useTaggedPages } from '../ui/useTaggedPages';

/** The catalogue: search by tag (`?tags=a,b`), like and follow, and a way into each run form. */
export function ModelsPage() {
  const {
    text,
    setText,
    items: models,
    setItems: setModels,
    next,
    load,
    error,
    setError,
    search,
  } = useTaggedPages(
    '/models',
    async (tags, after) =>
      (await gql(ModelListDocument, { first: 50, after, filter: tags.length ? { tags } : null })).models,
  );

  const replace = (m: ModelCardFragment) =>
    setModels((old) => old?.map((o) => (o.id === m.id ? m : o)) ?? old);

  return (
    <section aria-labelledby="models-title">
      <h1 id="models-title">Run a model</h1>
      <form className="inline-form" role="search" onSubmit={search}>
        <label htmlFor="model-tags">Tags</label>
        <input
          id="model-tags"
          value={text}
          onChange={(e) => setText(e.target.value)}
          placeholder="image, text"
          autoComplete="off"
        />
        <button type="submit">Search</button>
      </form>
      <ErrorNote>{error}</ErrorNote>
      {models === null ? (
        <Loading what="the catalogue" />
      ) : models.length === 0 ? (
        <p className="empty">No model carries these tags.</p>
      ) : (
        <ul className="cards" aria-label="Models">
          {models.map((m) => (
            <ModelCard key={m.id} model={m} onChange={replace} onError={setError} />
          ))}
        </ul>
      )}
      {next ? (
        <button type="button" onClick={() => void load(next)}>
          More models
        </button>
      ) : null}
    </section>
  );
}

function ModelCard({
  model: m,
  onChange,
  onError,
}: {
  model: ModelCardFragment;
  onChange: (m: ModelCardFragment) => void;
  onError: (message: string) => void;
}) {
  const toggle = async (kind: 'like' | 'follow') => {
    try {
      if (kind === 'like') {
        const r = m.viewerLikes
          ? (await gql(UnlikeModelDocument, { id: m.id })).unlikeModel
          : (await gql(LikeModelDocument, { id: m.id })).likeModel;
        onChange(r);
      } else {
        const r = m.viewerFollows
          ? (await gql(UnfollowModelDocument, { id: m.id })).unfollowModel
          : (await gql(FollowModelDocument, { id: m.id })).followModel;
        onChange(r);
      }
    } catch (err) {
      onError(messageOf(err));
    }
  };
  return (
    <li className="card" aria-label={m.name}>
      <h2>
        <Link href={`/models/${m.id}`}>{m.name}</Link>
      </h2>
      {m.description ? <p>{m.description}</p> : null}
      <p className="tags">
        {m.tags.map((t) => (
          <Link key={t} className="tag" href={`/models?tags=${encodeURIComponent(t)}`}>
            {t}
          </Link>
        ))}
      </p>
      <p className="muted small">
        v{m.version} · {m.runCount} run{m.runCount === 1 ? '' : 's'}
        {m.builtin ? ' · built in' : ''}
      </p>
      <div className="actions">
        <Link className="button primary" href={`/models/${m.id}`}>
          Run
        </Link>
        <button type="button" aria-pressed={m.viewerLikes} onClick={() => void toggle('like')}>
          {m.viewerLikes ? 'Liked' : 'Like'} ({m.likeCount})
        </button>
        <button type="button" aria-pressed={m.viewerFollows} onClick={() => void toggle('follow')}>
          {m.viewerFollows ? 'Following' : 'Follow'} ({m.followCount})
        </button>
      </div>
    </li>
  );
}
