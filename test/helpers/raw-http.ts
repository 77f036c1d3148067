import http from 'node:http';

/** An answer as the wire gave it: status, every header, the body as text. */
export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * One request over node:http, with exactly the headers given (fetch would add its own). A body
 * given with `chunked` is written before the end, so it goes out without a Content-Length.
 */
export function rawRequest(
  url: string,
  options: { method: string; headers: Record<string, string> },
  body?: string,
  chunked = false,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    if (chunked && body !== undefined) req.write(body);
    req.end(chunked ? undefined : body);
  });
}
