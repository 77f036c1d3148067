import { accessToken } from './session';

export interface UploadHandle {
  /** Resolves with the new media id. */
  done: Promise<string>;
  cancel(): void;
}

/**
 * Uploads one file to the upload path (`POST /uploads/upload`, multipart) with progress.
 * XMLHttpRequest, because fetch reports no upload progress.
 */
export function upload(
  file: File,
  tags: string[],
  onProgress: (sent: number, total: number) => void,
): UploadHandle {
  const xhr = new XMLHttpRequest();
  let canceled = false;
  const done = (async () => {
    const token = await accessToken();
    if (canceled) throw new DOMException('canceled', 'AbortError');
    return new Promise<string>((resolve, reject) => {
      xhr.open('POST', '/uploads/upload');
      xhr.setRequestHeader('authorization', `Bearer ${token}`);
      xhr.responseType = 'json';
      xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
      xhr.onload = () => {
        const body = xhr.response as { media?: { id: string }; error?: { message: string } } | null;
        if (xhr.status === 200 && body?.media) resolve(body.media.id);
        else reject(new Error(body?.error?.message ?? `upload failed (${xhr.status})`));
      };
      xhr.onerror = () => reject(new Error('the upload was interrupted'));
      xhr.onabort = () => reject(new DOMException('canceled', 'AbortError'));
      const form = new FormData();
      if (tags.length) form.append('tags', tags.join(','));
      form.append('file', file, file.name);
      xhr.send(form);
    });
  })();
  return {
    done,
    cancel: () => {
      canceled = true;
      xhr.abort();
    },
  };
}
